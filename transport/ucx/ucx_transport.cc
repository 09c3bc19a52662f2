#include "transport/ucx/ucx_transport.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "common/logging.h"
#include "transport/util/hex.h"

namespace hoop {
namespace {

// After shm, before ofi and tcp.
const bool kRegistered = [] {
  RegisterTransport("ucx", 20, &UcxTransport::Create, &UcxTransport::Describe);
  return true;
}();

constexpr uint16_t kAmId = 0x68;  // 'h'
constexpr uint32_t kData = 0, kAbort = 1;
constexpr auto kSpin = std::chrono::microseconds(50);

Status UcsError(const std::string& what, ucs_status_t s) { return Unavailable(what + ": " + ucs_status_string(s)); }

StatusOr<ucp_context_h> MakeContext() {
  ucp_config_t* cfg = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &cfg);
  if (st != UCS_OK) return UcsError("ucx: reading UCX_* settings", st);
  ucp_params_t p{};
  p.field_mask = UCP_PARAM_FIELD_FEATURES;
  p.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  ucp_context_h ctx = nullptr;
  st = ucp_init(&p, cfg, &ctx);
  ucp_config_release(cfg);
  if (st != UCS_OK) return UcsError("ucx: ucp_init", st);
  return ctx;
}
}  // namespace

StatusOr<std::unique_ptr<Transport>> UcxTransport::Create(const TransportOptions& opts) {
  (void)kRegistered;
  HOOP_ASSIGN_OR_RETURN(ucp_context_h ctx, MakeContext());
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;  // the worker thread or a blocking caller, one at a time
  ucp_worker_h worker = nullptr;
  ucs_status_t st = ucp_worker_create(ctx, &wp, &worker);
  if (st != UCS_OK) {
    ucp_cleanup(ctx);
    return UcsError("ucx: ucp_worker_create", st);
  }
  int efd = -1;
  st = ucp_worker_get_efd(worker, &efd);
  ucp_address_t* addr = nullptr;
  size_t addr_len = 0;
  if (st == UCS_OK) st = ucp_worker_get_address(worker, &addr, &addr_len);
  if (st != UCS_OK) {
    ucp_worker_destroy(worker);
    ucp_cleanup(ctx);
    return UcsError("ucx: worker event fd and address", st);
  }
  std::string address = std::to_string(::getpid()) + ":" + Hex(addr, addr_len);
  ucp_worker_release_address(worker, addr);
  std::unique_ptr<UcxTransport> t(new UcxTransport(opts, ctx, worker, efd, address));
  ucp_am_handler_param_t hp{};
  hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG |
                  UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
  hp.id = kAmId;
  hp.cb = &UcxTransport::OnMessage;
  hp.arg = t.get();
  hp.flags = UCP_AM_FLAG_WHOLE_MSG | UCP_AM_FLAG_PERSISTENT_DATA;
  st = ucp_worker_set_am_recv_handler(worker, &hp);
  if (st != UCS_OK) return UcsError("ucx: setting the message handler", st);
  return std::unique_ptr<Transport>(std::move(t));
}

UcxTransport::UcxTransport(TransportOptions opts, ucp_context_h ctx, ucp_worker_h worker, int efd, std::string address)
    : opts_(std::move(opts)), ctx_(ctx), worker_(worker), efd_(efd), address_(std::move(address)) {
  peers_.resize(static_cast<size_t>(opts_.size));
}

void UcxTransport::Settle(std::vector<void*>* requests, std::chrono::milliseconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!requests->empty() && std::chrono::steady_clock::now() < until) {
    ucp_worker_progress(worker_);
    requests->erase(std::remove_if(requests->begin(), requests->end(),
                                   [](void* r) {
                                     if (ucp_request_check_status(r) == UCS_INPROGRESS) return false;
                                     ucp_request_free(r);
                                     return true;
                                   }),
                    requests->end());
  }
}

UcxTransport::~UcxTransport() {
  // Close every endpoint, flushing what is still queued to it, for a bounded time - but by force
  // (UCX cancels its requests) where its peer failed, or everywhere once this rank aborted or a
  // loss is pending: a flush to a peer that is gone never ends, and destroying the worker while
  // an endpoint still holds requests fails UCX's assertion and aborts the process (seen when a
  // rank on another host was killed mid-allreduce: a rank here died of SIGABRT on its way out).
  const bool failing = aborted_ || !losses_.empty();
  // An abort notice (a revocation's) not sent yet: the peer may be slow, not gone, and the force
  // below would cancel it, so a revocation that returned would not reach it (seen on a loaded
  // machine: the peer then saw this process exit instead). Bounded (1 s): a peer that is gone
  // may never take it.
  Settle(&abort_sends_, std::chrono::seconds(1));
  for (void* r : abort_sends_) ucp_request_free(r);  // released when UCX is done with it
  std::vector<void*> closing;
  for (auto& ps : peers_) {
    if (!ps.ep) continue;
    ucp_request_param_t prm{};
    if (failing || !ps.failure.ok()) {
      prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
    }
    void* r = ucp_ep_close_nbx(ps.ep, &prm);
    if (r && !UCS_PTR_IS_ERR(r)) closing.push_back(r);
  }
  Settle(&closing, std::chrono::seconds(2));
  // A peer that lives but does not progress (computing, or blocked outside hoop) never
  // acknowledges a flushing close. Release what is left, so that destroying the worker finds no
  // request of ours held (UCX's assertion would abort the process), and say so.
  if (!closing.empty())
    HOOP_LOG(kWarn, "ucx: " << closing.size()
                            << " endpoint close(s) not acknowledged within 2 s (a peer not progressing); closed "
                               "without it");
  for (void* r : closing) ucp_request_free(r);
  for (auto& ps : peers_)
    for (auto& [match, e] : ps.early) ucp_am_data_release(worker_, e.data);
  for (auto& [p, memh] : staging_) ucp_mem_unmap(ctx_, memh);
  ucp_worker_destroy(worker_);
  ucp_cleanup(ctx_);
}

Status UcxTransport::Connect(int peer, const std::string& address, Deadline) {
  const std::string ctx = "ucx: connecting to rank " + std::to_string(peer);
  PeerState* ps = state(peer);
  if (!ps || peer == opts_.rank) return InvalidArgument(ctx + ": no such peer");
  size_t colon = address.find(':');
  std::vector<unsigned char> raw;
  if (colon == std::string::npos || !Unhex(address.substr(colon + 1), &raw) || raw.empty())
    return InvalidArgument(ctx + ": bad address");
  ps->pid = std::atoi(address.substr(0, colon).c_str());
  // A lost peer: UCX's peer error handling sees it on network links, but its shared-memory
  // transports cannot offer that mode (they would refuse the endpoint), so for ranks on this
  // host a pidfd tells instead.
  const bool local = !opts_.peers.empty() &&
                     opts_.peers[static_cast<size_t>(peer)].host == opts_.peers[static_cast<size_t>(opts_.rank)].host;
  ucp_ep_params_t ep{};
  ep.field_mask =
      UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  ep.address = reinterpret_cast<const ucp_address_t*>(raw.data());
  ep.err_mode = local ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER;
  ep.err_handler.cb = &UcxTransport::OnPeerError;
  ep.err_handler.arg = this;
  ucs_status_t st = ucp_ep_create(worker_, &ep, &ps->ep);
  if (st != UCS_OK) return UcsError(ctx, st);
  ps->endpoint = std::make_unique<Peer>(this, peer);
  if (local) HOOP_RETURN_IF_ERROR(watch_.Watch(peer, ps->pid).WithContext(ctx));
  return Status::Ok();
}

StatusOr<Region> UcxTransport::Register(void* ptr, size_t bytes, MemKind kind) {
  if (!HostVisible(kind))
    return Unimplemented("ucx transport: only host memory is supported (got " + std::string(MemKindName(kind)) +
                         " memory)");
  return Region{ptr, bytes, kind, 0};  // UCX's registration cache serves user buffers
}

StatusOr<Region> UcxTransport::RegisterStaging(void* ptr, size_t bytes, MemKind kind) {
  HOOP_ASSIGN_OR_RETURN(Region r, Register(ptr, bytes, kind));
  auto it = staging_.find(ptr);
  if (it == staging_.end()) {
    ucp_mem_map_params_t mp{};
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = ptr;
    mp.length = bytes;
    ucp_mem_h memh = nullptr;
    ucs_status_t st = ucp_mem_map(ctx_, &mp, &memh);
    if (st != UCS_OK) return UcsError("ucx: registering a staging buffer", st);
    it = staging_.emplace(ptr, memh).first;
  }
  r.handle = reinterpret_cast<uint64_t>(it->second);
  return r;
}

Endpoint* UcxTransport::endpoint(int peer) {
  PeerState* ps = state(peer);
  return ps ? ps->endpoint.get() : nullptr;
}

UcxTransport::Op* UcxTransport::NewOp(int peer, bool is_send, uint64_t op_id, const Region& r, size_t offset,
                                      size_t len, Tag tag) {
  Op* op;
  if (free_.empty()) {
    ops_.push_back(std::make_unique<Op>());
    op = ops_.back().get();
  } else {
    op = free_.back();
    free_.pop_back();
  }
  *op = Op{this,
           peer,
           is_send,
           op_id,
           static_cast<char*>(r.base) + offset,
           len,
           tag,
           reinterpret_cast<ucp_mem_h>(r.handle),
           Header{tag.match, tag.check, opts_.rank, kData}};
  return op;
}

void UcxTransport::Peer::PostSend(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) {
  UcxTransport* t = t_;
  Op* op = t->NewOp(rank_, true, op_id, region, offset, len, tag);
  PeerState& ps = t->peers_[static_cast<size_t>(rank_)];
  if (!ps.failure.ok()) return t->Complete(op, ps.failure);
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  prm.cb.send = &UcxTransport::OnSendDone;
  prm.user_data = op;
  if (op->memh) {
    prm.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    prm.memh = op->memh;
  }
  t->Start(op, ucp_am_send_nbx(ps.ep, kAmId, &op->header, sizeof(Header), op->data, len, &prm), "sending");
}

void UcxTransport::Peer::PostRecv(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) {
  UcxTransport* t = t_;
  Op* op = t->NewOp(rank_, false, op_id, region, offset, len, tag);
  PeerState& ps = t->peers_[static_cast<size_t>(rank_)];
  // A message that arrived before the peer failed is still delivered.
  auto it = ps.early.find(tag.match);
  if (!ps.failure.ok() && (it == ps.early.end() || it->second.rndv)) return t->Complete(op, ps.failure);
  if (it != ps.early.end()) {
    Early msg = it->second;
    ps.early.erase(it);
    t->Deliver(op, msg);
  } else {
    ps.recvs[tag.match] = op;
  }
}

void UcxTransport::Start(Op* op, ucs_status_ptr_t r, const char* what) {
  if (r == nullptr) return Complete(op, Status::Ok());
  if (UCS_PTR_IS_ERR(r))
    return Complete(op, UcsError("lost peer " + std::to_string(op->peer) + " (" + what + ")", UCS_PTR_STATUS(r)));
  op->in_ucx = true;
  peers_[static_cast<size_t>(op->peer)].inflight.push_back(op);
}

void UcxTransport::Deliver(Op* op, const Early& msg) {
  if (msg.header.check != op->tag.check || msg.len != op->len) {
    ucp_am_data_release(worker_, msg.data);
    Complete(op,
             FailedPrecondition("peer " + std::to_string(op->peer) + " sent " + std::to_string(msg.len) +
                                " bytes where " + std::to_string(op->len) + " were expected"),
             msg.header.check);
    FailPeer(op->peer, FailedPrecondition("stream from peer " + std::to_string(op->peer) + " is out of step"));
    return;
  }
  if (!msg.rndv) {
    if (msg.len) std::memcpy(op->data, msg.data, msg.len);
    ucp_am_data_release(worker_, msg.data);
    return Complete(op, Status::Ok());
  }
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  prm.cb.recv_am = &UcxTransport::OnRecvDone;
  prm.user_data = op;
  if (op->memh) {
    prm.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    prm.memh = op->memh;
  }
  Start(op, ucp_am_recv_data_nbx(worker_, msg.data, op->data, op->len, &prm), "receiving");
}

ucs_status_t UcxTransport::OnMessage(void* arg, const void* header, size_t header_len, void* data, size_t len,
                                     const ucp_am_recv_param_t* param) {
  auto* t = static_cast<UcxTransport*>(arg);
  Header h{};
  if (header_len != sizeof(Header)) return UCS_OK;  // not ours: dropped
  std::memcpy(&h, header, sizeof(h));
  PeerState* ps = t->state(h.sender);
  if (!ps) return UCS_OK;
  bool rndv = param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV;
  if (h.kind != kData && h.kind != kAbort) {
    t->FailPeer(h.sender, Internal("peer " + std::to_string(h.sender) + " sent a message of unknown kind " +
                                   std::to_string(h.kind)));
    return UCS_OK;
  }
  if (h.kind == kAbort) {
    // Applied after the messages that came before it are matched (MatchFresh): an abort must not
    // overtake data the peer sent first.
    if (!rndv)
      t->aborts_.emplace_back(h.sender, PeerAborted(h.sender, std::string(static_cast<const char*>(data), len)));
    return UCS_OK;
  }
  // Matched after the progress call returns (no UCX calls from inside its callback).
  ps->early[h.match] = Early{h, data, len, rndv};
  t->fresh_.emplace_back(h.sender, h.match);
  return UCS_INPROGRESS;
}

void UcxTransport::MatchFresh() {
  for (auto [peer, match] : fresh_) {
    PeerState& ps = peers_[static_cast<size_t>(peer)];
    auto r = ps.recvs.find(match);
    auto e = ps.early.find(match);
    if (r == ps.recvs.end() || e == ps.early.end()) continue;
    Op* op = r->second;
    Early msg = e->second;
    ps.recvs.erase(r);
    ps.early.erase(e);
    Deliver(op, msg);
  }
  fresh_.clear();
}

void UcxTransport::OnSendDone(void* request, ucs_status_t status, void* user) {
  auto* op = static_cast<Op*>(user);
  ucp_request_free(request);
  op->in_ucx = false;
  if (status == UCS_OK) return op->owner->Complete(op, Status::Ok());
  // A broken link: the op stays in flight and fails with the peer, after any abort notice.
  op->owner->losses_.Add(op->peer, UcsError("lost peer " + std::to_string(op->peer), status));
}

void UcxTransport::OnRecvDone(void* request, ucs_status_t status, size_t, void* user) {
  auto* op = static_cast<Op*>(user);
  ucp_request_free(request);
  op->in_ucx = false;
  if (status == UCS_OK) return op->owner->Complete(op, Status::Ok());
  // A broken link: the op stays in flight and fails with the peer, after any abort notice.
  op->owner->losses_.Add(op->peer, UcsError("lost peer " + std::to_string(op->peer), status));
}

void UcxTransport::OnPeerError(void* arg, ucp_ep_h ep, ucs_status_t status) {
  auto* t = static_cast<UcxTransport*>(arg);
  for (size_t p = 0; p < t->peers_.size(); ++p)
    if (t->peers_[p].ep == ep) t->losses_.Add(static_cast<int>(p), UcsError("lost peer " + std::to_string(p), status));
}

void UcxTransport::Complete(Op* op, Status s, uint64_t peer_check) {
  PeerState& ps = peers_[static_cast<size_t>(op->peer)];
  // (An op whose UCX request ended in error but is not reported yet stays in `inflight`.)
  if (!op->reported) {
    op->reported = true;
    completed_.push_back({op->op_id, op->peer, op->is_send, std::move(s), peer_check});
    auto it = std::find(ps.inflight.begin(), ps.inflight.end(), op);
    if (it != ps.inflight.end()) ps.inflight.erase(it);
  }
  if (!op->in_ucx) free_.push_back(op);
}

void UcxTransport::FailPeer(int peer, const Status& why) {
  PeerState& ps = peers_[static_cast<size_t>(peer)];
  if (!ps.failure.ok()) return;
  ps.failure = why;
  std::vector<Op*> victims = ps.inflight;
  for (auto& [m, op] : ps.recvs) victims.push_back(op);
  ps.recvs.clear();
  for (Op* op : victims) Complete(op, why);
}

Status UcxTransport::Poll(std::vector<Completion>* out, Deadline deadline, SpinGate gate) {
  return ProgressLoop(*this, WaitStyle{"ucx", kSpin, 15, false}, out, deadline, gate);
}

Status UcxTransport::Progress(std::vector<Completion>* out) {
  while (ucp_worker_progress(worker_) != 0) {
  }
  MatchFresh();
  for (auto& [p, why] : aborts_) FailPeer(p, why);
  aborts_.clear();
  if (!losses_.empty())
    for (auto& [p, why] : losses_.Due()) FailPeer(p, why);
  if (!completed_.empty()) {
    out->insert(out->end(), completed_.begin(), completed_.end());
    completed_.clear();
  }
  return Status::Ok();
}

void UcxTransport::Watch(std::vector<Completion>*) {
  if (watch_.Due())
    for (int p : watch_.Exited()) losses_.Add(p, Unavailable(ExitedText(p, watch_.pid_of(p))));
}

Status UcxTransport::Sleep(std::vector<Completion>*, Deadline deadline) {
  // Until UCX has an event (or 10 ms, to look at the peers and the deadline).
  if (ucp_worker_arm(worker_) == UCS_ERR_BUSY) return Status::Ok();
  pollfd p{efd_, POLLIN, 0};
  ::poll(&p, 1, deadline.RemainingMs(10));
  return Status::Ok();
}

void UcxTransport::Abort(const std::string& cause) {
  aborted_ = true;
  std::string text = cause.substr(0, 1024);
  std::vector<void*> pending;
  Header h{0, 0, opts_.rank, kAbort};
  for (auto& ps : peers_) {
    // A peer we fell out of step with is still reachable and must hear why.
    if (!ps.ep || ps.failure.code() == Code::kUnavailable) continue;
    ucp_request_param_t prm{};
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    prm.flags = UCP_AM_SEND_FLAG_EAGER;
    void* r = ucp_am_send_nbx(ps.ep, kAmId, &h, sizeof(h), text.data(), text.size(), &prm);
    if (r && !UCS_PTR_IS_ERR(r)) pending.push_back(r);
  }
  Settle(&pending, std::chrono::milliseconds(200));
  abort_sends_.insert(abort_sends_.end(), pending.begin(), pending.end());
}

std::string UcxTransport::Describe() {
  std::string s = std::string("UCX ") + ucp_get_version_string();
  auto ctx = MakeContext();
  if (!ctx.ok()) return s + "; unusable here: " + ctx.status().message();
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  if (f) {
    ucp_context_print_info(*ctx, f);
    std::fclose(f);
  }
  // Keep the resource lines ("#   resource N: md M dev D flags -- tl/dev").
  std::string info(buf ? buf : "", len);
  std::free(buf);
  ucp_cleanup(*ctx);
  std::string res, cuda;
  size_t pos = 0;
  while (pos < info.size()) {
    size_t nl = info.find('\n', pos);
    std::string line = info.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? info.size() : nl + 1;
    size_t r = line.find("resource");
    if (r == std::string::npos) continue;
    size_t dash = line.find("-- ");
    if (dash == std::string::npos) continue;
    if (!res.empty()) res += ", ";
    const std::string tl = line.substr(dash + 3);
    res += tl;
    // Transports that move CUDA device memory themselves (UCX built with CUDA).
    if (tl.rfind("cuda_", 0) == 0 || tl.rfind("gdr_copy", 0) == 0) cuda += (cuda.empty() ? "" : ", ") + tl;
  }
  return s + "; transports: " + (res.empty() ? "(none listed)" : res) + "; CUDA-capable transports: " +
         (cuda.empty() ? "none (this UCX was built without CUDA)"
                       : cuda + " (hoop stages device buffers through host memory all the same, for now)");
}

}  // namespace hoop
