// The mailbox's protocol (mailbox.h says what travels and why): frames, credit, eager and
// rendezvous payloads, matching. Completions and the progress loop are in mailbox_progress.cc;
// timeouts, lost peers and shutdown in mailbox_failure.cc.
#include <algorithm>
#include <cstring>
#include <sstream>

#include "transport/tagged/mailbox_internal.h"

namespace hoop {

Mailbox::Mailbox(Transport& t, Options o)
    : t_(t),
      o_(o),
      credit_(
          std::max<uint64_t>(o.unexpected_bytes / static_cast<uint64_t>(std::max(1, o.size - 1)), 4 * kFrameBytes)) {
  for (int p = 0; p < o_.size; ++p) {
    peers_.push_back(std::make_unique<PeerState>());
    peers_.back()->credit = credit_;
  }
}

Mailbox::~Mailbox() = default;

uint64_t Mailbox::FrameMatch(uint64_t n) const { return kP2pBit | (n & ((uint64_t{1} << 48) - 1)); }
uint64_t Mailbox::DataMatch(uint64_t msg, uint64_t piece) const {
  return kP2pBit | kDataBit | ((msg & 0x3fffffff) << 24) | (piece & 0xffffff);
}

Status Mailbox::Start() {
  static_assert(sizeof(Frame) == kFrameBytes);
  const size_t landing = 2 * kFrameBytes * static_cast<size_t>(o_.size);
  in_mem_ = std::make_unique<char[]>(landing);
  HOOP_ASSIGN_OR_RETURN(in_frames_, t_.RegisterStaging(in_mem_.get(), landing, MemKind::kHost));
  for (int p = 0; p < o_.size; ++p)
    if (p != o_.rank) PostFrameRecv(p);
  return Status::Ok();
}

void Mailbox::PostFrameRecv(int peer) {
  PeerState& ps = *peers_[static_cast<size_t>(peer)];
  t_.endpoint(peer)->PostRecv(in_frames_, LandingAt(peer, ps.next_in), kFrameBytes,
                              Tag{FrameMatch(ps.next_in), kFrameCheck},
                              OpId(Kind::kFrameIn, static_cast<uint64_t>(peer)));
}

size_t Mailbox::LandingAt(int peer, uint64_t n) const {
  return kFrameBytes * (2 * static_cast<size_t>(peer) + static_cast<size_t>(n & 1));
}

StatusOr<uint64_t> Mailbox::FrameSlot() {
  if (free_frames_.empty()) {
    auto mem = std::make_unique<char[]>(kFrameBytes * kFramesPerBlock);
    HOOP_ASSIGN_OR_RETURN(Region r, t_.RegisterStaging(mem.get(), kFrameBytes * kFramesPerBlock, MemKind::kHost));
    const uint64_t base = frame_blocks_.size() * kFramesPerBlock;
    frame_blocks_.push_back(std::move(mem));
    frame_regions_.push_back(r);
    for (uint64_t i = kFramesPerBlock; i-- > 0;) free_frames_.push_back(base + i);
  }
  const uint64_t slot = free_frames_.back();
  free_frames_.pop_back();
  return slot;
}

void Mailbox::SendFrame(int peer, Frame& f) {
  PeerState& ps = *peers_[static_cast<size_t>(peer)];
  f.credit = ps.owed;
  ps.owed = 0;
  const Tag tag{FrameMatch(ps.next_out), kFrameCheck};
  // Copied out at once where the back end can: no frame slot, and no completion to poll for.
  if (t_.endpoint(peer)->SendCopy(&f, kFrameBytes, tag)) {
    ++ps.next_out;
    return;
  }
  auto slot = FrameSlot();
  if (!slot.ok()) {
    if (fatal_.ok()) fatal_ = slot.status().WithContext("rank " + std::to_string(o_.rank) + ": point-to-point");
    return;
  }
  const Region& r = frame_regions_[*slot / kFramesPerBlock];
  const size_t off = (*slot % kFramesPerBlock) * kFrameBytes;
  std::memcpy(static_cast<char*>(r.base) + off, &f, kFrameBytes);
  ++frames_out_;
  ++ps.next_out;
  t_.endpoint(peer)->PostSend(r, off, kFrameBytes, tag, OpId(Kind::kFrameOut, *slot));
}

std::string Mailbox::Describe(const P2pCall& c) const {
  std::ostringstream os;
  os << "rank " << o_.rank << ": " << (c.is_send ? "send to rank " : "receive from ");
  if (c.is_send)
    os << c.peer;
  else if (c.peer == kAnySource)
    os << "any rank";
  else
    os << "rank " << c.peer;
  os << ", tag " << c.tag << " (" << c.count << " x " << DTypeName(c.dtype) << ")";
  return os.str();
}

void Mailbox::Complete(const std::shared_ptr<P2pCall>& call, const Status& s) {
  if (!call) return;
  --live_;
  if (call->asked) AskHold(*call, false);
  call->complete(s);
}

void Mailbox::AskHold(P2pCall& call, bool on) {
  if (call.asked == on || (on && call.peer == o_.rank)) return;
  call.asked = on;
  const int first = call.peer == kAnySource ? 0 : call.peer;
  const int last = call.peer == kAnySource ? o_.size - 1 : call.peer;
  for (int p = first; p <= last; ++p) {
    if (p == o_.rank) continue;
    PeerState& ps = *peers_[static_cast<size_t>(p)];
    if (on ? ps.asks++ == 0 : --ps.asks == 0) t_.endpoint(p)->AskHold(on, o_.unexpected_bytes, kP2pBit);
  }
}

// ---- posting ----

void Mailbox::Post(std::shared_ptr<P2pCall> call) {
  ++live_;
  if (closed_ || !fatal_.ok()) {
    Complete(call, Aborted(Describe(*call) + ": the communicator failed earlier: " +
                           (fatal_.ok() ? std::string("closed") : fatal_.message())));
    return;
  }
  if (call->peer >= 0 && call->peer != o_.rank) {
    // A peer that left after sending keeps what it sent: a receive it matches still takes it
    // (its exit may be read in the same poll as its last payload, before this receive comes).
    const Status& lost = peers_[static_cast<size_t>(call->peer)]->lost;
    if (!lost.ok() && (call->is_send || !HeldFor(*call)))
      return Complete(call, Status(lost.code(), Describe(*call) + ": lost " + lost.message()));
  }
  // The fast path: no Send kept, no memory registered, no deadline read from the clock.
  if (call->is_send && !call->queue &&
      SendSmall(call->peer, call->tag, call->data, call->count * DTypeSize(call->dtype), call->dtype))
    return Complete(call, Status::Ok());
  if (call->deadline.IsNever()) call->deadline = Deadline::After(o_.timeout);
  if (call->ask_at_post && call->peer != o_.rank) AskHold(*call, true);
  if (call->is_send)
    PostSend(std::move(call));
  else
    PostRecv(std::move(call));
}

bool Mailbox::SendSmall(int peer, int tag, const void* data, uint64_t bytes, DType dtype) {
  if (bytes > kEagerMax || bytes > o_.piece_bytes || peer == o_.rank || closed_ || !fatal_.ok()) return false;
  PeerState& ps = *peers_[static_cast<size_t>(peer)];
  if (!ps.lost.ok() || !ps.waiting.empty() || ps.credit < kFrameBytes + bytes) return false;
  if (bytes <= kInlineBytes) {
    SendInline(peer, tag, dtype, data, ps.next_msg++, bytes);
    return true;
  }
  // Its eager frame and its payload (one piece), both copied out at once where the back end
  // can: no Send kept, nothing to wait for. Else the caller posts it.
  Frame f = MessageFrame(kEager, tag, dtype, bytes, ps.next_msg);
  f.credit = ps.owed;
  const Endpoint::Copy both[2] = {{&f, kFrameBytes, Tag{FrameMatch(ps.next_out), kFrameCheck}},
                                  {data, bytes, Tag{DataMatch(ps.next_msg, 0), kDataCheck}}};
  if (!t_.endpoint(peer)->SendCopies(both, 2)) return false;
  ps.owed = 0;
  ++ps.next_out;
  ++ps.next_msg;
  ps.credit -= kFrameBytes + bytes;
  return true;
}

void Mailbox::PostSend(std::shared_ptr<P2pCall> call) {
  if (call->peer == o_.rank) return SendToSelf(std::move(call));
  const uint64_t bytes = call->count * DTypeSize(call->dtype);
  PeerState& ps = *peers_[static_cast<size_t>(call->peer)];
  auto region = t_.Register(call->data, bytes, call->kind);
  if (!region.ok()) return Complete(call, region.status().WithContext(Describe(*call)));
  auto s = std::make_unique<Send>();
  s->id = next_id_++;
  s->peer = call->peer;
  s->msg = ps.next_msg++;
  s->bytes = bytes;
  s->region = *region;
  s->piece = static_cast<uint32_t>(o_.piece_bytes);
  s->call = std::move(call);
  ps.waiting.push_back(s->id);
  const int peer = s->peer;
  sends_.emplace(s->id, std::move(s));
  Launch(peer);
}

void Mailbox::Launch(int peer) {
  PeerState& ps = *peers_[static_cast<size_t>(peer)];
  while (!ps.waiting.empty()) {
    auto it = sends_.find(ps.waiting.front());
    if (it == sends_.end()) {  // expired while waiting
      ps.waiting.pop_front();
      continue;
    }
    Send& s = *it->second;
    // Device memory goes by rendezvous: nothing of it is copied out here.
    const bool eager = (!s.call->queue || s.bytes == 0) && s.bytes <= kEagerMax && ps.credit >= kFrameBytes + s.bytes;
    if (!eager && ps.credit < kFrameBytes) return;  // the receiver holds all it may: wait
    ps.waiting.pop_front();
    if (eager && s.bytes <= kInlineBytes) {
      SendInline(peer, s.call->tag, s.call->dtype, s.call->data, s.msg, s.bytes);
      auto done = std::move(s.call);
      sends_.erase(it);
      Complete(done, Status::Ok());  // the frame carries a copy
      continue;
    }
    Frame f = MessageFrame(eager ? kEager : kRts, s.call->tag, s.call->dtype, s.bytes, s.msg);
    ps.credit -= kFrameBytes + (eager ? s.bytes : 0);
    SendFrame(peer, f);
    if (eager) {
      PostPayload(s);
    } else {
      s.state = Send::kAwaitingCts;
      awaiting_cts_[{peer, s.msg}] = s.id;
    }
  }
}

Mailbox::Frame Mailbox::MessageFrame(uint32_t kind, int tag, DType dtype, uint64_t bytes, uint64_t msg) const {
  Frame f;
  f.kind = kind;
  f.tag = tag;
  f.bytes = bytes;
  f.msg = msg;
  f.piece = static_cast<uint32_t>(o_.piece_bytes);
  f.dtype = static_cast<uint8_t>(dtype);
  return f;
}

void Mailbox::SendInline(int peer, int tag, DType dtype, const void* data, uint64_t msg, uint64_t bytes) {
  Frame f = MessageFrame(kEager, tag, dtype, bytes, msg);
  if (bytes) std::memcpy(f.data, data, bytes);
  peers_[static_cast<size_t>(peer)]->credit -= kFrameBytes + bytes;
  SendFrame(peer, f);
}

void Mailbox::PostPayload(Send& s) {
  s.state = Send::kSending;
  const uint64_t n = (s.bytes + s.piece - 1) / s.piece;
  s.pieces_left = n;
  Endpoint* ep = t_.endpoint(s.peer);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t off = i * s.piece, len = std::min<uint64_t>(s.piece, s.bytes - off);
    ep->PostSend(s.region, s.own ? 0 : off, len, Tag{DataMatch(s.msg, i), kDataCheck}, OpId(Kind::kDataOut, s.id));
  }
}

void Mailbox::SendToSelf(std::shared_ptr<P2pCall> call) {
  auto a = std::make_unique<Arrival>();
  a->id = next_id_++;
  a->peer = o_.rank;
  a->tag = call->tag;
  a->msg = self_msg_++;
  a->bytes = call->count * DTypeSize(call->dtype);
  a->dtype = call->dtype;
  a->posted = a->landed = true;
  if (!call->queue && a->bytes <= kEagerMax && self_held_ + a->bytes <= credit_) {
    a->own = std::make_unique<char[]>(a->bytes);
    if (a->bytes) std::memcpy(a->own.get(), call->data, a->bytes);
    a->from = a->own.get();
    a->cost = a->bytes;
    self_held_ += a->bytes;
    Complete(call, Status::Ok());
  } else {  // held by reference: the send completes when a receive takes it
    a->from = static_cast<const char*>(call->data);
    a->self_send = std::move(call);
  }
  Arrive(std::move(a));
}

bool Mailbox::HeldFor(const P2pCall& recv) const {
  for (uint64_t id : unexpected_) {
    const Arrival& a = *arrivals_.at(id);
    if (Matches(recv, a.peer, a.tag)) return true;
  }
  return false;
}

void Mailbox::PostRecv(std::shared_ptr<P2pCall> call) {
  for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
    const Arrival& a = *arrivals_.at(*it);
    if (!Matches(*call, a.peer, a.tag)) continue;
    const uint64_t id = *it;
    unexpected_.erase(it);
    return Match(std::move(call), id);
  }
  posted_.push_back(std::move(call));
}

// ---- arriving ----

void Mailbox::OnFrame(int peer, const Frame& f) {
  TakeCredit(peer, f.credit);
  switch (f.kind) {
    case kCredit: return;
    case kBye: return LosePeer(peer, FailedPrecondition("freed the communicator"), true);
    case kEager:
    case kRts: {
      if (retiring_) return;  // sent to a communicator this rank freed: nobody will receive it
      if (f.kind == kEager && f.bytes <= kInlineBytes && DeliverInline(peer, f)) return;
      auto a = std::make_unique<Arrival>();
      a->id = next_id_++;
      a->peer = peer;
      a->tag = f.tag;
      a->msg = f.msg;
      a->bytes = f.bytes;
      a->dtype = f.dtype <= static_cast<uint8_t>(kLastDType) ? static_cast<DType>(f.dtype) : DType::kU8;
      a->rndv = f.kind == kRts;
      a->piece = std::max<uint32_t>(1, f.piece);
      a->cost = kFrameBytes + (a->rndv ? 0 : f.bytes);
      if (!a->rndv && f.bytes <= kInlineBytes) {
        std::memcpy(a->small, f.data, f.bytes);
        a->from = a->small;
        a->posted = a->landed = true;
      }
      if (a->rndv) rndv_by_msg_[{peer, a->msg}] = a->id;
      return Arrive(std::move(a));
    }
    case kCts: {
      auto it = awaiting_cts_.find({peer, f.msg});
      if (it != awaiting_cts_.end()) {
        auto s = sends_.find(it->second);
        awaiting_cts_.erase(it);
        if (s != sends_.end()) PostPayload(*s->second);
        return;
      }
      // The send expired before the receive came: say so, then drain the receive with zeros.
      Frame nack;
      nack.kind = kNack;
      nack.msg = f.msg;
      SendFrame(peer, nack);
      auto z = std::make_unique<Send>();
      z->id = next_id_++;
      z->peer = peer;
      z->msg = f.msg;
      z->bytes = f.bytes;
      z->piece = std::max<uint32_t>(1, f.piece);
      const size_t zb = static_cast<size_t>(std::min<uint64_t>(f.bytes, z->piece));
      z->own = std::make_unique<char[]>(std::max<size_t>(1, zb));
      std::memset(z->own.get(), 0, std::max<size_t>(1, zb));
      auto r = t_.Register(z->own.get(), zb, MemKind::kHost);
      if (!r.ok()) {
        if (fatal_.ok()) fatal_ = r.status();
        return;
      }
      z->region = *r;
      Send& ref = *z;
      sends_.emplace(z->id, std::move(z));
      PostPayload(ref);
      if (ref.pieces_left == 0) sends_.erase(ref.id);
      return;
    }
    case kNack: return OnNack(peer, f);
    default:
      if (fatal_.ok())
        fatal_ = Internal("rank " + std::to_string(o_.rank) + ": point-to-point: frame of unknown kind " +
                          std::to_string(f.kind) + " from rank " + std::to_string(peer));
  }
}

// A sender gave a rendezvous up: its receive fails when the zeros that drain it land.
void Mailbox::OnNack(int peer, const Frame& f) {
  auto it = rndv_by_msg_.find({peer, f.msg});
  if (it == rndv_by_msg_.end()) return;
  auto a = arrivals_.find(it->second);
  if (a == arrivals_.end()) return;
  const std::string what = " (tag " + std::to_string(a->second->tag) + ", " + std::to_string(a->second->bytes) + " B)";
  a->second->nack = f.tag == kNackFreed ? FailedPrecondition("rank " + std::to_string(peer) +
                                                             " freed the communicator before sending this message" +
                                                             what + "; its send failed there")
                                        : DeadlineExceeded("rank " + std::to_string(peer) + " gave up its send" + what +
                                                           " at its HOOP_TIMEOUT, before this receive was posted");
}

void Mailbox::Arrive(std::unique_ptr<Arrival> a) {
  const uint64_t id = a->id;
  Arrival& ref = *a;
  arrivals_.emplace(id, std::move(a));
  for (auto it = posted_.begin(); it != posted_.end(); ++it) {
    if (!Matches(**it, ref.peer, ref.tag)) continue;
    auto call = std::move(*it);
    posted_.erase(it);
    return Match(std::move(call), id);
  }
  unexpected_.push_back(id);
  if (!ref.posted) {
    if (ref.rndv) return;  // its payload waits at the sender until a receive clears it
    ref.own = std::make_unique<char[]>(ref.bytes);
    ref.from = ref.own.get();
    ReceivePayload(ref, ref.own.get(), false);
  }
}

Status Mailbox::Refusal(const P2pCall& call, int peer, uint64_t bytes, DType dtype) const {
  const uint64_t capacity = call.count * DTypeSize(call.dtype);
  if (dtype != call.dtype)
    return InvalidArgument(Describe(call) + ": the message from rank " + std::to_string(peer) + " is " +
                           std::to_string(bytes / DTypeSize(dtype)) + " x " + DTypeName(dtype) + ", not " +
                           DTypeName(call.dtype));
  if (bytes > capacity)
    return InvalidArgument(Describe(call) + ": the message from rank " + std::to_string(peer) + " is " +
                           std::to_string(bytes) + " bytes, longer than the receive's " + std::to_string(capacity) +
                           " bytes");
  return Status::Ok();
}

bool Mailbox::DeliverInline(int peer, const Frame& f) {
  // A posted receive never matches a message held unexpected (each side looks at the other's
  // list first), so the first posted one that matches is the one Arrive would pick.
  auto it = std::find_if(posted_.begin(), posted_.end(), [&](const auto& c) { return Matches(*c, peer, f.tag); });
  if (it == posted_.end()) return false;
  auto call = std::move(*it);
  if (it == posted_.begin())
    posted_.pop_front();  // the usual one, without the deque's general erase
  else
    posted_.erase(it);
  const DType dtype = f.dtype <= static_cast<uint8_t>(kLastDType) ? static_cast<DType>(f.dtype) : DType::kU8;
  Status s = Refusal(*call, peer, f.bytes, dtype);
  if (call->info) *call->info = RecvInfo{peer, f.tag, f.bytes / DTypeSize(dtype)};
  if (s.ok()) s = Deliver(*call, f.data, nullptr, f.bytes);
  ReturnCredit(peer, kFrameBytes + f.bytes);
  Complete(call, s);
  return true;
}

void Mailbox::Match(std::shared_ptr<P2pCall> call, uint64_t id) {
  Arrival& a = *arrivals_.at(id);
  a.refused = Refusal(*call, a.peer, a.bytes, a.dtype);
  if (call->info) *call->info = RecvInfo{a.peer, a.tag, a.bytes / DTypeSize(a.dtype)};
  a.call = std::move(call);
  if (a.landed) return Finish(id);
  if (a.posted) return;  // arriving into its own buffer: Finish delivers
  if (a.rndv) {
    Frame cts;
    cts.kind = kCts;
    cts.msg = a.msg;
    cts.bytes = a.bytes;
    cts.piece = a.piece;
    SendFrame(a.peer, cts);
  }
  if (a.refused.ok()) {
    ReceivePayload(a, static_cast<char*>(a.call->data), false);
  } else {  // drained into one piece's worth of memory, overwritten piece after piece
    a.own = std::make_unique<char[]>(std::max<uint64_t>(1, std::min<uint64_t>(a.bytes, a.piece)));
    ReceivePayload(a, a.own.get(), true);
  }
}

void Mailbox::ReceivePayload(Arrival& a, char* dest, bool one_piece_buffer) {
  a.posted = true;
  const uint64_t n = (a.bytes + a.piece - 1) / a.piece;
  const uint64_t span = one_piece_buffer ? std::min<uint64_t>(a.bytes, a.piece) : a.bytes;
  auto region = t_.Register(dest, span, a.call && !one_piece_buffer ? a.call->kind : MemKind::kHost);
  if (!region.ok()) {
    if (fatal_.ok()) fatal_ = region.status().WithContext("rank " + std::to_string(o_.rank) + ": point-to-point");
    return;
  }
  a.pieces_left = n;
  if (n == 1) one_piece_ = {a.peer, a.msg, a.id};
  Endpoint* ep = t_.endpoint(a.peer);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t off = i * a.piece, len = std::min<uint64_t>(a.piece, a.bytes - off);
    ep->PostRecv(*region, one_piece_buffer ? 0 : off, len, Tag{DataMatch(a.msg, i), kDataCheck},
                 OpId(Kind::kDataIn, a.id));
  }
  if (n == 0) Finish(a.id);
}

void Mailbox::Finish(uint64_t id) {
  auto it = arrivals_.find(id);
  Arrival& a = *it->second;
  a.landed = true;
  if (!a.call) return;  // held until a receive matches it
  Status s = !a.refused.ok() ? a.refused : a.nack;
  if (s.ok() && a.from && a.from != a.call->data)
    s = Deliver(*a.call, a.from, a.self_send ? a.self_send->queue : nullptr, a.bytes);
  auto call = std::move(a.call);
  auto self_send = std::move(a.self_send);
  const int peer = a.peer;
  const uint64_t cost = a.cost;
  if (a.rndv) rndv_by_msg_.erase({a.peer, a.msg});
  arrivals_.erase(it);
  ReturnCredit(peer, cost);
  Complete(call, s);
  Complete(self_send, Status::Ok());
}

Status Mailbox::Deliver(P2pCall& to, const void* from, DeviceQueue* from_queue, uint64_t bytes) const {
  if (bytes == 0) return Status::Ok();
  DeviceQueue* q = to.queue ? to.queue : from_queue;
  if (q == nullptr) {
    std::memcpy(to.data, from, bytes);
    return Status::Ok();
  }
  Status s =
      q->Copy(to.data, to.queue ? MemKind::kCuda : to.kind, from, from_queue ? MemKind::kCuda : MemKind::kHost, bytes);
  if (s.ok()) s = q->Drain();
  return s.ok() ? s : s.WithContext(Describe(to) + ": copying the message into place");
}

void Mailbox::ReturnCredit(int peer, uint64_t bytes) {
  if (peer == o_.rank) {
    self_held_ -= bytes;
    return;
  }
  PeerState& ps = *peers_[static_cast<size_t>(peer)];
  ps.owed += bytes;
  if (ps.owed >= credit_ / 2) {
    Frame f;
    f.kind = kCredit;
    SendFrame(peer, f);
  }
}

}  // namespace hoop
