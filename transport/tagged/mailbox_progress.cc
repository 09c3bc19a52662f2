// The mailbox's progress (mailbox.h): the transport's completions handled by kind, frames taken
// from the peers as they land (credit returned, the frame receive posted again), small messages
// taken inline by a caller that waits for them, and the progress loop that drives it all.
#include <algorithm>
#include <cstring>

#include "transport/tagged/mailbox_internal.h"

namespace hoop {

void Mailbox::Handle(const Completion& c) {
  const Kind kind = static_cast<Kind>((c.op_id >> 56) & 0x7f);
  const uint64_t id = c.op_id & kIdMask;
  if (kind == Kind::kFrameOut) {  // done with the frame either way
    --frames_out_;
    free_frames_.push_back(id);
  }
  if (!c.status.ok()) {
    LosePeer(c.peer, c.status);
    // A payload still landing after its sender's goodbye (LosePeer keeps it) whose connection
    // then failed: the transport has given its memory back, so the receive fails now.
    if (kind == Kind::kDataIn) DropArrival(id, c.status);
    return;
  }
  switch (kind) {
    case Kind::kFrameIn: return FrameIn(static_cast<int>(id), false);
    case Kind::kFrameOut: return;
    case Kind::kDataOut: {
      auto it = sends_.find(id);
      if (it == sends_.end() || --it->second->pieces_left > 0) return;
      auto call = std::move(it->second->call);
      sends_.erase(it);
      return Complete(call, Status::Ok());
    }
    case Kind::kDataIn: {
      auto it = arrivals_.find(id);
      if (it == arrivals_.end() || --it->second->pieces_left > 0) return;
      return Finish(id);
    }
  }
}

Mailbox::Frame Mailbox::Landed(int peer) const {
  Frame f;
  const uint64_t n = peers_[static_cast<size_t>(peer)]->next_in;
  std::memcpy(&f, static_cast<const char*>(in_frames_.base) + LandingAt(peer, n), kFrameBytes);
  return f;
}

void Mailbox::TakeCredit(int peer, uint64_t credit) {
  if (!credit) return;
  peers_[static_cast<size_t>(peer)]->credit += credit;
  Launch(peer);  // sends waiting for it
}

void Mailbox::FrameIn(int peer, bool posted_again) {
  const Frame f = Landed(peer);
  PeerState& ps = *peers_[static_cast<size_t>(peer)];
  ++ps.next_in;
  if (f.kind == kBye) ps.bye = true;  // its last frame
  const bool more = f.kind != kBye && (!closed_ || retiring_);
  if (more && !posted_again) PostFrameRecv(peer);
  // A receive left posted for a frame that never comes would outlive this mailbox, and could
  // take a frame of a later communicator given this one's view id.
  if (!more && posted_again) t_.endpoint(peer)->Withdraw(OpId(Kind::kFrameIn, static_cast<uint64_t>(peer)));
  OnFrame(peer, f);
}

bool Mailbox::TakeNextFrame(int peer, unsigned spins) {
  if (closed_ || !fatal_.ok() || peer < 0 || peer >= o_.size || peer == o_.rank) return false;
  const PeerState& ps = *peers_[static_cast<size_t>(peer)];
  if (ps.bye || !ps.lost.ok()) return false;
  // The frame receive stays posted for the next frame (no post through the hub per frame), into
  // the peer's other landing slot: another communicator's thread polling the shared link may
  // land that frame before this one is read (Endpoint::TakeNow).
  const NextRecv next{Tag{FrameMatch(ps.next_in + 1), kFrameCheck},
                      static_cast<char*>(in_frames_.base) + LandingAt(peer, ps.next_in + 1)};
  return t_.endpoint(peer)->TakeNow(Tag{FrameMatch(ps.next_in), kFrameCheck},
                                    OpId(Kind::kFrameIn, static_cast<uint64_t>(peer)), spins, &next);
}

void Mailbox::HandleTaken(int peer, unsigned spins) {
  one_piece_ = {};
  FrameIn(peer, true);  // as if the poll had brought it
  // An eager payload of one piece, posted for that frame just now, is next on the stream: taken
  // the same way when it has come (or comes within the spin).
  if (one_piece_.peer == peer) {
    const uint64_t data_op = OpId(Kind::kDataIn, one_piece_.arrival);
    if (t_.endpoint(peer)->TakeNow(Tag{DataMatch(one_piece_.msg, 0), kDataCheck}, data_op, spins, nullptr))
      Handle(Completion{data_op, peer, false, Status::Ok(), 0});
  }
}

bool Mailbox::TakeFrame(int peer, unsigned spins) {
  if (!TakeNextFrame(peer, spins)) return false;
  HandleTaken(peer, spins);
  return true;
}

Mailbox::Taken Mailbox::TakeInline(int peer, int tag, void* data, uint64_t capacity, DType dtype, RecvInfo* info,
                                   unsigned spins) {
  // The message must be the first this receive may take: no receive posted ahead that it could
  // match, and none held from that peer with that tag.
  for (const auto& c : posted_)
    if (Matches(*c, peer, tag)) return Taken::kNothing;
  for (uint64_t id : unexpected_) {
    const Arrival& a = *arrivals_.at(id);
    if (a.peer == peer && a.tag == tag) return Taken::kNothing;
  }
  if (!TakeNextFrame(peer, spins)) return Taken::kNothing;
  const Frame f = Landed(peer);
  if (f.kind != kEager || f.tag != tag || f.bytes > kInlineBytes || f.dtype != static_cast<uint8_t>(dtype) ||
      f.bytes > capacity)
    return Taken::kOther;  // anything else goes the ordinary way, once the receive is posted
  // What FrameIn, OnFrame and DeliverInline do for such a frame, without the receive's post.
  ++peers_[static_cast<size_t>(peer)]->next_in;
  TakeCredit(peer, f.credit);
  if (f.bytes) std::memcpy(data, f.data, f.bytes);
  if (info) *info = RecvInfo{peer, tag, f.bytes / DTypeSize(dtype)};
  ReturnCredit(peer, kFrameBytes + f.bytes);
  return Taken::kMine;
}

bool Mailbox::Progress(Deadline deadline, SpinGate gate) {
  done_.clear();
  Status s = t_.Poll(&done_, deadline, gate);  // nothing by the deadline is no failure here
  if (!s.ok() && s.code() != Code::kDeadlineExceeded && fatal_.ok())
    fatal_ = s.WithContext("rank " + std::to_string(o_.rank) + ": point-to-point");  // the connections failed
  for (const Completion& c : done_)
    if (c.op_id & kP2pBit) Handle(c);
  // Deadlines are seconds long: looking every 10 ms keeps the scan off the fast path, and the
  // clock is read only when the poll came back empty or every 16th turn.
  if (s.ok() && (++turns_ & 15) != 0) return true;
  const auto now = Deadline::Clock::now();
  if (now >= next_expire_) {
    next_expire_ = now + std::chrono::milliseconds(10);
    Expire();
  }
  return s.ok();
}

}  // namespace hoop
