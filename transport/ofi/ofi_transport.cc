#include "transport/ofi/ofi_transport.h"

#include <dirent.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "common/logging.h"
#include "transport/util/hex.h"

namespace hoop {
namespace {

const bool kRegistered = [] {
  RegisterTransport("ofi", 30, &OfiTransport::Create, &OfiTransport::Describe);
  return true;
}();

constexpr uint64_t kAbortTag = ~uint64_t{0};   // no collective's match word is all ones
constexpr uint64_t kCreditTag = ~uint64_t{2};  // nor this (~1 is select.cc's confirmation)
constexpr size_t kMinWindow = 8;
constexpr size_t kAbortBytes = 1024;
constexpr const char* kShmScheme = "fi_shm://";
constexpr auto kSpin = std::chrono::microseconds(50);

Status FiError(const Libfabric& fi, const std::string& what, int rc) {
  return Unavailable(what + ": " + fi.strerror(rc < 0 ? -rc : rc));
}

fi_info* Hints(const Libfabric& fi) {
  fi_info* h = fi.dupinfo(nullptr);  // fi_allocinfo()
  h->caps = FI_TAGGED | FI_DIRECTED_RECV;
  h->mode = FI_CONTEXT;
  h->ep_attr->type = FI_EP_RDM;
  h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;  // no FI_MR_LOCAL
  h->domain_attr->threading = FI_THREAD_DOMAIN;
  return h;
}

bool Usable(const fi_info* i) {
  std::string p = i->fabric_attr->prov_name ? i->fabric_attr->prov_name : "";
  return p != "sockets" && p.rfind("psm", 0) != 0 && i->domain_attr->cq_data_size >= 8;
}

}  // namespace

StatusOr<std::unique_ptr<Transport>> OfiTransport::Create(const TransportOptions& opts) {
  (void)kRegistered;
  HOOP_ASSIGN_OR_RETURN(const Libfabric fi, LoadLibfabric());
  fi_info* hints = Hints(fi);
  fi_info* list = nullptr;
  // The provider that reaches this rank's own address (loopback on one host, the right
  // interface across hosts); providers with no IP addressing (shm) answer without a node.
  int rc = fi.getinfo(FI_VERSION(1, 9), opts.host.c_str(), nullptr, 0, hints, &list);
  bool any = false;
  for (fi_info* i = rc == 0 ? list : nullptr; i; i = i->next) any |= Usable(i);
  if (!any) {
    if (list) fi.freeinfo(list);
    list = nullptr;
    rc = fi.getinfo(FI_VERSION(1, 9), nullptr, nullptr, 0, hints, &list);
  }
  fi.freeinfo(hints);
  if (rc != 0) return FiError(fi, "ofi: no RDM provider with tagged messages (FI_PROVIDER picks one)", rc);
  fi_info* pick = nullptr;
  std::string refused;
  for (fi_info* i = list; i && !pick; i = i->next) {
    if (Usable(i))
      pick = i;
    else if (refused.empty())
      refused = i->fabric_attr->prov_name ? i->fabric_attr->prov_name : "?";
  }
  if (!pick) {
    fi.freeinfo(list);
    if (refused == "sockets")
      return FailedPrecondition(
          "ofi: libfabric's sockets provider hangs on this machine and is refused; "
          "choose another with FI_PROVIDER ('tcp;ofi_rxm' or 'shm')");
    return Unavailable("ofi: no usable provider (found only " + refused + ")");
  }
  fi_info* mine = fi.dupinfo(pick);
  fi.freeinfo(list);
  std::unique_ptr<OfiTransport> t(new OfiTransport(fi, opts, mine));
  HOOP_RETURN_IF_ERROR(t->Open().WithContext("ofi (" + t->provider_ + ")"));
  return std::unique_ptr<Transport>(std::move(t));
}

OfiTransport::OfiTransport(const Libfabric& fi, TransportOptions opts, fi_info* info)
    : fi_(fi), opts_(std::move(opts)), info_(info) {
  provider_ = info_->fabric_attr->prov_name ? info_->fabric_attr->prov_name : "?";
  shm_only_ = provider_ == "shm";
  peers_.resize(static_cast<size_t>(opts_.size));
}

Status OfiTransport::Open() {
  int rc = fi_.fabric(info_->fabric_attr, &fabric_, nullptr);
  if (rc) return FiError(fi_, "fi_fabric", rc);
  if ((rc = fi_domain(fabric_, info_, &domain_, nullptr))) return FiError(fi_, "fi_domain", rc);
  fi_av_attr av{};
  av.type = FI_AV_TABLE;
  if ((rc = fi_av_open(domain_, &av, &av_, nullptr))) return FiError(fi_, "fi_av_open", rc);
  fi_cq_attr cq{};
  cq.format = FI_CQ_FORMAT_TAGGED;
  cq.wait_obj = FI_WAIT_NONE;
  cq.size = 1024;
  if ((rc = fi_cq_open(domain_, &cq, &cq_, nullptr))) return FiError(fi_, "fi_cq_open", rc);
  if ((rc = fi_endpoint(domain_, info_, &ep_, nullptr))) return FiError(fi_, "fi_endpoint", rc);
  if ((rc = fi_ep_bind(ep_, &av_->fid, 0))) return FiError(fi_, "binding the address vector", rc);
  if ((rc = fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV))) return FiError(fi_, "binding the completion queue", rc);
  if ((rc = fi_enable(ep_))) return FiError(fi_, "fi_enable", rc);
  char name[256];
  size_t len = sizeof(name);
  if ((rc = fi_getname(&ep_->fid, name, &len))) return FiError(fi_, "fi_getname", rc);
  address_ = std::to_string(::getpid()) + ":" + Hex(name, len);
  // Flow control's window (ofi_transport.h): half the receive queue, shared among the peers.
  if (info_->tx_attr->inject_size >= sizeof(uint64_t) && opts_.size > 1)
    window_ = std::max(kMinWindow, info_->rx_attr->size / 2 / static_cast<size_t>(opts_.size - 1));
  const std::string text(name, strnlen(name, len));
  if (text.rfind(kShmScheme, 0) == 0) own_shm_region_ = text.substr(std::strlen(kShmScheme));
  if (shm_only_ && !own_shm_region_.empty()) rescue_ = ShmLockRescue::Start(own_shm_region_, fi_.version());
  return Status::Ok();
}

void OfiTransport::AllConnected() {
  // Only a name of this process's own ("<pid>:..."), never a path.
  const std::string& r = own_shm_region_;
  if (r.empty() || r.find('/') != std::string::npos || r.rfind(std::to_string(::getpid()) + ":", 0) != 0) return;
  if (::shm_unlink(("/" + r).c_str()) == 0)
    HOOP_LOG(kDebug, "ofi: unlinked /dev/shm/" << r << ": every peer has it mapped");
  own_shm_region_.clear();
}

OfiTransport::~OfiTransport() {
  // Abort's notices still on their way after its own 200 ms (a loaded machine): closing the
  // endpoint would cancel them, and a revocation that returned would not reach a slow peer (it
  // would see this process exit instead; UCX's back end does the same). Bounded: 1 s more.
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
       std::chrono::steady_clock::now() < until && AbortNoticePending();)
    DrainCq();
  rescue_.reset();  // its thread looks into regions that closing the endpoint unmaps
  // A peer that died after this transport last looked (as it made another communicator).
  for (size_t p = 0; p < peers_.size(); ++p)
    if (!peers_[p].swept && ProcessGone(watch_.pid_of(static_cast<int>(p)), 0)) RemoveRegionsOf(static_cast<int>(p));
  if (ep_) fi_close(&ep_->fid);
  if (cq_) fi_close(&cq_->fid);
  if (av_) fi_close(&av_->fid);
  if (domain_) fi_close(&domain_->fid);
  if (fabric_) fi_close(&fabric_->fid);
  fi_.freeinfo(info_);
}

Status OfiTransport::Connect(int peer, const std::string& address, Deadline) {
  const std::string ctx = "ofi: connecting to rank " + std::to_string(peer);
  if (peer < 0 || peer >= opts_.size || peer == opts_.rank) return InvalidArgument(ctx + ": no such peer");
  size_t colon = address.find(':');
  std::string hex = colon == std::string::npos ? "" : address.substr(colon + 1);
  if (hex.empty() || hex.size() % 2) return InvalidArgument(ctx + ": bad address");
  std::vector<unsigned char> raw(hex.size() / 2);
  for (size_t i = 0; i < raw.size(); ++i)
    raw[i] = static_cast<unsigned char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  PeerState& ps = peers_[static_cast<size_t>(peer)];
  int n = fi_av_insert(av_, raw.data(), 1, &ps.addr, 0, nullptr);
  if (n != 1) return FiError(fi_, ctx + ": fi_av_insert", n < 0 ? n : -FI_EINVAL);
  // The shm provider's address is the name of the peer's region: "fi_shm://<pid>:<n>:<m>".
  const auto* text = reinterpret_cast<const char*>(raw.data());
  const std::string name(text, strnlen(text, raw.size()));
  if (name.rfind(kShmScheme, 0) == 0) ps.shm_region = name.substr(std::strlen(kShmScheme));
  ps.endpoint = std::make_unique<Peer>(this, peer);
  // A receive for the peer's abort notice, always posted.
  abort_bufs_.push_back(std::make_unique<char[]>(kAbortBytes));
  Op* op = NewOp(peer, false, 0, abort_bufs_.back().get(), kAbortBytes, Tag{kAbortTag, 0});
  op->is_abort = true;
  Issue(op);
  ps.credits = window_;
  if (window_ > 0) PostCreditRecv(peer);
  int pid = std::atoi(address.substr(0, colon).c_str());
  if (!opts_.peers.empty() &&
      opts_.peers[static_cast<size_t>(peer)].host == opts_.peers[static_cast<size_t>(opts_.rank)].host)
    HOOP_RETURN_IF_ERROR(watch_.Watch(peer, pid).WithContext(ctx));
  if (rescue_ && !ps.shm_region.empty()) rescue_->Watch(peer, pid, ps.shm_region);
  return Status::Ok();
}

StatusOr<Region> OfiTransport::Register(void* ptr, size_t bytes, MemKind kind) {
  if (!HostVisible(kind))
    return Unimplemented("ofi transport: only host memory is supported (got " + std::string(MemKindName(kind)) +
                         " memory)");
  return Region{ptr, bytes, kind, 0};  // the providers used need no local registration
}

Endpoint* OfiTransport::endpoint(int peer) {
  if (peer < 0 || peer >= opts_.size) return nullptr;
  return peers_[static_cast<size_t>(peer)].endpoint.get();
}

OfiTransport::Op* OfiTransport::NewOp(int peer, bool is_send, uint64_t op_id, char* data, size_t len, Tag tag) {
  Op* op;
  if (free_.empty()) {
    ops_.push_back(std::make_unique<Op>());
    op = ops_.back().get();
  } else {
    op = free_.back();
    free_.pop_back();
  }
  *op = Op{};
  op->peer = peer;
  op->is_send = is_send;
  op->is_abort = false;
  op->is_credit = false;
  op->op_id = op_id;
  op->data = data;
  op->len = len;
  op->tag = tag;
  return op;
}

void OfiTransport::Peer::PostSend(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) {
  t_->Send(t_->NewOp(rank_, true, op_id, static_cast<char*>(region.base) + offset, len, tag));
}

void OfiTransport::Peer::PostRecv(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) {
  t_->Issue(t_->NewOp(rank_, false, op_id, static_cast<char*>(region.base) + offset, len, tag));
}

void OfiTransport::Issue(Op* op) {
  PeerState& ps = peers_[static_cast<size_t>(op->peer)];
  if (!ps.failure.ok() && !(op->is_abort && op->is_send && ps.failure.code() != Code::kUnavailable))
    return Complete(op, ps.failure);
  // A peer whose process exited (its loss may still be held back, DeferredLosses) gets nothing:
  // the shm provider's send takes a lock in its queue, which it may have held as it died.
  if (op->is_send && ps.swept) return Complete(op, Unavailable(ExitedText(op->peer, watch_.pid_of(op->peer))));
  ssize_t rc;
  if (op->is_send && op->is_abort) {
    // An abort notice completes only once the peer has it (the sender may exit right after).
    iovec iov{op->data, op->len};
    fi_msg_tagged m{};
    m.msg_iov = &iov;
    m.iov_count = 1;
    m.addr = ps.addr;
    m.tag = op->tag.match;
    m.context = &op->ctx;
    rc = fi_tsendmsg(ep_, &m, FI_DELIVERY_COMPLETE);
    if (rc != 0 && rc != -FI_EAGAIN) rc = fi_tsend(ep_, op->data, op->len, nullptr, ps.addr, op->tag.match, &op->ctx);
  } else {
    rc = op->is_send ? fi_tsenddata(ep_, op->data, op->len, nullptr, op->tag.check, ps.addr, op->tag.match, &op->ctx)
                     : fi_trecv(ep_, op->data, op->len, nullptr, ps.addr, op->tag.match, 0, &op->ctx);
  }
  if (rc == -FI_EAGAIN) {
    again_.push_back(op);
    return;
  }
  if (rc != 0)
    return Complete(
        op,
        FiError(fi_, std::string(op->is_send ? "sending to" : "receiving from") + " rank " + std::to_string(op->peer),
                static_cast<int>(rc)));
  op->posted = true;
  ps.posted.push_back(op);
}

void OfiTransport::Send(Op* op) {
  PeerState& ps = peers_[static_cast<size_t>(op->peer)];
  if (window_ == 0 || !ps.failure.ok()) return Issue(op);
  if (ps.credits == 0 || !ps.held.empty()) {
    ps.held.push_back(op);
    return;
  }
  --ps.credits;
  Issue(op);
}

void OfiTransport::PostCreditRecv(int peer) {
  PeerState& ps = peers_[static_cast<size_t>(peer)];
  Op* op = NewOp(peer, false, 0, reinterpret_cast<char*>(&ps.credit_in), sizeof(ps.credit_in), Tag{kCreditTag, 0});
  op->is_credit = true;
  Issue(op);
}

void OfiTransport::Credited(Op* op) {
  const int peer = op->peer;
  PeerState& ps = peers_[static_cast<size_t>(peer)];
  ps.credits += ps.credit_in;
  Complete(op, Status::Ok());
  if (!ps.failure.ok()) return;
  PostCreditRecv(peer);
  while (ps.credits > 0 && !ps.held.empty()) {
    Op* next = ps.held.front();
    ps.held.pop_front();
    --ps.credits;
    Issue(next);
  }
}

void OfiTransport::Took(int peer) {
  PeerState& ps = peers_[static_cast<size_t>(peer)];
  if (window_ == 0) return;
  if (++ps.taken == std::max<size_t>(window_ / 2, 1)) ReturnCredit(peer);
}

void OfiTransport::ReturnCredit(int peer) {
  PeerState& ps = peers_[static_cast<size_t>(peer)];
  if (!ps.failure.ok() || ps.taken == 0) return;
  // Injected: the provider copies the word at once and reports no completion.
  ssize_t rc = fi_tinject(ep_, &ps.taken, sizeof(ps.taken), ps.addr, kCreditTag);
  if (rc == -FI_EAGAIN) {
    if (std::find(owed_.begin(), owed_.end(), peer) == owed_.end()) owed_.push_back(peer);
    return;
  }
  if (rc != 0)
    return losses_.Add(peer, FiError(fi_, "returning credit to rank " + std::to_string(peer), static_cast<int>(rc)));
  ps.taken = 0;
}

void OfiTransport::Complete(Op* op, Status s, uint64_t peer_check) {
  PeerState& ps = peers_[static_cast<size_t>(op->peer)];
  if (op->is_abort) {
    if (s.ok() && !op->is_send) {
      FailPeer(op->peer, PeerAborted(op->peer, std::string(op->data, strnlen(op->data, kAbortBytes))));
    }
  } else if (!op->reported && !op->is_credit) {
    completed_.push_back({op->op_id, op->peer, op->is_send, std::move(s), peer_check});
  }
  op->reported = true;
  auto it = std::find(ps.posted.begin(), ps.posted.end(), op);
  if (it != ps.posted.end() && !op->posted) ps.posted.erase(it);
  if (!op->posted) free_.push_back(op);
}

// The shm provider's regions a dead process left: its names are "<pid>:<n>:<m>", one per
// endpoint, and a process that died while making a new communicator has one no survivor was told
// of. Only names of the dead process's own, never a path: nothing else is touched. Every survivor
// tries; the first removes each.
void OfiTransport::RemoveRegionsOf(int peer) {
  const int pid = watch_.pid_of(peer);
  if (pid <= 0 || peers_[static_cast<size_t>(peer)].shm_region.empty()) return;
  const std::string prefix = std::to_string(pid) + ":";
  DIR* dir = ::opendir("/dev/shm");
  if (!dir) return;
  std::vector<std::string> names;
  while (dirent* e = ::readdir(dir))
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) names.emplace_back(e->d_name);
  ::closedir(dir);
  for (const auto& name : names)
    if (::shm_unlink(("/" + name).c_str()) == 0)
      HOOP_LOG(kInfo, "ofi: removed /dev/shm/" << name << " left by rank " << peer);
}

std::vector<int> OfiTransport::Departed() {
  std::vector<int> gone = watch_.Exited();
  for (int p : gone) {
    RemoveRegionsOf(p);
    peers_[static_cast<size_t>(p)].swept = true;
  }
  return gone;
}

void OfiTransport::FailPeer(int peer, const Status& why) {
  PeerState& ps = peers_[static_cast<size_t>(peer)];
  if (!ps.failure.ok()) return;
  ps.failure = why;
  // Operations the provider holds are cancelled; they complete here now and are recycled when
  // the provider hands them back.
  for (Op* op : std::vector<Op*>(ps.posted)) {
    if (!op->posted) {  // its error came back already
      Complete(op, why);
      continue;
    }
    fi_cancel(&ep_->fid, &op->ctx);
    if (!op->is_abort && !op->is_credit && !op->reported)
      completed_.push_back({op->op_id, op->peer, op->is_send, why, 0});
    op->reported = true;
  }
  for (Op* op : ps.held) Complete(op, why);
  ps.held.clear();
  for (auto it = again_.begin(); it != again_.end();) {
    if ((*it)->peer == peer) {
      Complete(*it, why);
      it = again_.erase(it);
    } else {
      ++it;
    }
  }
}

void OfiTransport::DrainCq() {
  fi_cq_tagged_entry e[16];
  while (true) {
    ssize_t n = fi_cq_read(cq_, e, 16);
    if (n == -FI_EAGAIN) break;
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      if (fi_cq_readerr(cq_, &err, 0) <= 0) break;
      Op* op = reinterpret_cast<Op*>(err.op_context);
      if (!op) continue;
      op->posted = false;
      if (err.err == FI_ECANCELED) {
        Complete(op, Aborted("cancelled"));
        continue;
      }
      // Debian's libfabric 1.17 shm provider reports truncation negated, and with its CQ data
      // (our check word, never 0) zeroed.
      const bool truncated = err.err == FI_ETRUNC || err.err == -FI_ETRUNC;
      const bool has_check = (err.flags & FI_REMOTE_CQ_DATA) && err.data != 0;
      Status s = truncated ? FailedPrecondition("peer " + std::to_string(op->peer) +
                                                " sent a longer message than the " + std::to_string(op->len) +
                                                " bytes expected: the ranks disagree on the operation")
                           : Unavailable("lost peer " + std::to_string(op->peer) + ": " +
                                         fi_cq_strerror(cq_, err.prov_errno, err.err_data, nullptr, 0));
      if (truncated && has_check) {
        int peer = op->peer;
        Complete(op, s, err.data);  // the sender's check word: the caller names the difference
        FailPeer(peer, s);
      } else if (truncated) {
        // Without the peer's word we cannot say how the ranks disagree; the peer may (it got a
        // short message, which carries it), so its abort notice gets the usual time to win.
        losses_.Add(op->peer, s);
      } else {
        // A broken link: the op fails with the peer, after any abort notice it sent.
        losses_.Add(op->peer, s);
      }
      continue;
    }
    if (n < 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      Op* op = reinterpret_cast<Op*>(e[i].op_context);
      op->posted = false;
      if (!op->is_send && !op->is_abort && !op->is_credit) Took(op->peer);
      if (op->reported) {  // cancelled earlier, completed anyway
        Complete(op, Status::Ok());
        continue;
      }
      if (op->is_credit) {
        Credited(op);
        continue;
      }
      if (!op->is_send && !op->is_abort && ((e[i].flags & FI_REMOTE_CQ_DATA) && e[i].data != op->tag.check)) {
        Complete(op, FailedPrecondition("peer " + std::to_string(op->peer) + " is in another operation"), e[i].data);
        continue;
      }
      if (!op->is_send && !op->is_abort && e[i].len != op->len) {
        Complete(op, FailedPrecondition("peer " + std::to_string(op->peer) + " sent " + std::to_string(e[i].len) +
                                        " bytes where " + std::to_string(op->len) + " were expected"));
        continue;
      }
      Complete(op, Status::Ok());
    }
  }
  // Retry what the provider refused for lack of room.
  for (size_t k = again_.size(); k > 0; --k) {
    Op* op = again_.front();
    again_.pop_front();
    Issue(op);
  }
  for (int p : std::exchange(owed_, {})) ReturnCredit(p);
}

Status OfiTransport::Poll(std::vector<Completion>* out, Deadline deadline, SpinGate gate) {
  nap_ = std::chrono::microseconds(20);
  return ProgressLoop(*this, WaitStyle{"ofi", kSpin, 0, false}, out, deadline, gate);
}

Status OfiTransport::Progress(std::vector<Completion>* out) {
  DrainCq();
  if (!losses_.empty())
    for (auto& [p, why] : losses_.Due()) FailPeer(p, why);
  if (!completed_.empty()) {
    out->insert(out->end(), completed_.begin(), completed_.end());
    completed_.clear();
  }
  return Status::Ok();
}

void OfiTransport::Watch(std::vector<Completion>*) {
  if (watch_.Due())
    for (int p : Departed()) losses_.Add(p, Unavailable(ExitedText(p, watch_.pid_of(p))));
}

Status OfiTransport::Sleep(std::vector<Completion>*, Deadline deadline) {
  // libfabric's providers here offer no wait object worth having: nap, longer each time.
  std::this_thread::sleep_for(std::min<std::chrono::microseconds>(
      nap_, std::chrono::duration_cast<std::chrono::microseconds>(deadline.at() - Deadline::Clock::now())));
  nap_ = std::min(nap_ * 2, std::chrono::microseconds(1000));
  return Status::Ok();
}

void OfiTransport::Abort(const std::string& cause) {
  std::string text = cause.substr(0, kAbortBytes - 1);
  text.push_back('\0');
  // A peer whose process is gone gets nothing: a send into a dead process's shared-memory
  // queue (the shm provider) could wait on a lock it held when it died.
  for (int p : Departed()) FailPeer(p, Unavailable(ExitedText(p, watch_.pid_of(p))));
  for (size_t p = 0; p < peers_.size(); ++p) {
    PeerState& ps = peers_[p];
    // A peer we fell out of step with is still reachable and must hear why.
    if (!ps.endpoint || ps.failure.code() == Code::kUnavailable) continue;
    // Nor a dead or stopped one (SIGSTOP): the shm provider's send takes a lock in the peer's
    // queue, which the peer may hold, stopped inside its own progress, until it is continued,
    // or forever where it died so (the loss noticed earlier may be held back: DeferredLosses).
    if (ps.swept || ProcessGone(watch_.pid_of(static_cast<int>(p)), 0)) continue;
    if (ProcessStopped(watch_.pid_of(static_cast<int>(p)))) {
      HOOP_LOG(kWarn, "ofi: rank " << p << " (pid " << watch_.pid_of(static_cast<int>(p))
                                   << ") is stopped: it gets no abort notice, which could wait for it");
      continue;
    }
    ps.abort_text = text;
    Op* op = NewOp(static_cast<int>(p), true, 0, ps.abort_text.data(), ps.abort_text.size(), Tag{kAbortTag, 0});
    op->is_abort = true;
    Issue(op);
  }
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  while (std::chrono::steady_clock::now() < until) {
    DrainCq();
    bool pending = !again_.empty();
    for (auto& ps : peers_)
      for (Op* op : ps.posted) pending |= op->is_send && op->is_abort;
    // Done: but keep the provider progressing a little longer, so that what it buffered
    // (rxm queues small sends) is on the wire before this process may exit.
    if (!pending && std::chrono::steady_clock::now() + std::chrono::milliseconds(150) >= until) break;
  }
  completed_.clear();
}

bool OfiTransport::AbortNoticePending() {
  auto waiting = [this](const Op* op) {
    if (!op->is_send || !op->is_abort) return false;
    // Not for a peer gone or stopped since: the shm provider's progress may wait on its lock.
    const int pid = watch_.pid_of(op->peer);
    return !ProcessGone(pid, 0) && !ProcessStopped(pid);
  };
  for (const Op* op : again_)
    if (waiting(op)) return true;
  for (const auto& ps : peers_)
    for (const Op* op : ps.posted)
      if (waiting(op)) return true;
  return false;
}

std::string OfiTransport::Describe() {
  auto loaded = LoadLibfabric();
  if (!loaded.ok()) return loaded.status().message();
  const Libfabric& fi = loaded.value();
  const uint32_t v = fi.version();
  std::string s = "libfabric " + std::to_string(FI_MAJOR(v)) + "." + std::to_string(FI_MINOR(v));
  fi_info* hints = Hints(fi);
  fi_info* list = nullptr;
  int rc = fi.getinfo(FI_VERSION(1, 9), nullptr, nullptr, 0, hints, &list);
  fi.freeinfo(hints);
  if (rc != 0) return s + "; no RDM provider with tagged messages: " + fi.strerror(-rc);
  std::vector<std::string> seen;
  for (fi_info* i = list; i; i = i->next) {
    std::string p = i->fabric_attr->prov_name ? i->fabric_attr->prov_name : "?";
    if (!Usable(i)) p += " (refused)";
    if (std::find(seen.begin(), seen.end(), p) == seen.end()) seen.push_back(p);
  }
  fi.freeinfo(list);
  std::string ps;
  for (auto& p : seen) {
    if (!ps.empty()) ps += ", ";
    ps += p;
  }
  return s + "; RDM providers with tagged messages: " + ps;
}

}  // namespace hoop
