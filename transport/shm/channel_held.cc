// Messages held for receives not posted yet, on rings several communicators share.
//
// A head message whose receive is not posted stalls the ring (channel.h): right for one
// communicator, whose ranks all post in one order, and a deadlock for two whose ranks run them in
// different orders (a dup's message at the head of the ring while this rank waits, on the world,
// for a message behind it, and the peer waits for this rank's world reply before it posts); and
// for one communicator whose rank waits on point-to-point traffic before it joins a collective
// its peer already started. Once the hub has a second view it asks for this
// (Transport::HoldEarly), and the mailbox for one peer while a call with it is open (AskHold; not
// for the mailbox's own messages, whose receives it posts as their frames come): the message is
// copied out of
// the ring into memory of its own, up to the cap in all (past it the ring stalls as before), and
// given to its receive when that is posted, in any order, by the same matching rules (tag, then
// length and check) as at the head of the ring: into host memory by a copy, into a sink in ring-
// sized fragments, into device memory on the device queue (completing in order through landing_).
// A device descriptor is never held: its sender's memory is read where it lies.
#include <algorithm>
#include <cstring>

#include "transport/shm/channel.h"

namespace hoop::shm {

bool Channel::Hold(const SlotHeader& h) {
  const size_t cap = holds_.CapFor(h.match);
  if (cap == 0 || (h.flags & kSlotDevice) != 0 || h.total > cap - std::min(cap, held_bytes_)) return false;
  held_.push_back({Tag{h.match, h.check}, std::vector<char>(h.total), false});
  held_bytes_ += h.total;
  cur_ = RecvOp{held_.back().bytes.data(), h.total, Tag{h.match, h.check}, 0};
  cur_held_ = true;
  return true;
}

void Channel::HeldDone(std::vector<Completion>* out) {
  cur_held_ = false;
  held_.back().whole = true;
  const uint64_t match = held_.back().tag.match;
  auto it = std::find_if(recvs_.begin(), recvs_.end(), [&](const RecvOp& r) { return r.tag.match == match; });
  if (it == recvs_.end()) return;
  const RecvOp r = *it;
  recvs_.erase(it);
  TakeHeld(r, out);
}

bool Channel::TakeHeld(const RecvOp& r, std::vector<Completion>* out) {
  auto h =
      std::find_if(held_.begin(), held_.end(), [&](const Held& m) { return m.whole && m.tag.match == r.tag.match; });
  if (h == held_.end()) return false;
  const std::vector<char> bytes = std::move(h->bytes);
  const uint64_t check = h->tag.check;
  held_bytes_ -= bytes.size();
  held_.erase(h);
  if (check != r.tag.check || bytes.size() != r.len) {
    out->push_back({r.op_id, peer_, false,
                    FailedPrecondition("peer " + std::to_string(peer_) + " sent " + std::to_string(bytes.size()) +
                                       " bytes where " + std::to_string(r.len) + " were expected"),
                    check});
    Fail(FailedPrecondition("stream from peer " + std::to_string(peer_) + " is out of step"), out);
    return true;
  }
  if (r.device < 0 && !r.sink) {
    if (!bytes.empty()) std::memcpy(r.data, bytes.data(), bytes.size());
    out->push_back({r.op_id, peer_, false, Status::Ok(), 0});
    return true;
  }
  // Fragment by fragment, as the ring would have brought it (a sink's pieces end on elements).
  Status error;
  size_t off = 0;
  do {
    const size_t n = std::min(kInlineMax, bytes.size() - off);
    if (r.device >= 0) {
      if (error.ok()) error = LandOnDevice(r, bytes.data() + off, off, n);
    } else {
      r.sink->Consume(off, bytes.data() + off, n);
    }
    off += n;
  } while (off < bytes.size());
  if (r.device < 0) {
    out->push_back({r.op_id, peer_, false, Status::Ok(), 0});
    return true;
  }
  Landing l{r.op_id, nullptr, 0, false, nullptr, error};
  if (error.ok()) {
    auto q = RecvQueue(r.device);
    auto mark = q.ok() ? (*q)->Mark() : StatusOr<uint64_t>(q.status());
    if (mark.ok())
      l.q = *q, l.mark = *mark;
    else
      l.error = mark.status();
  }
  landing_.push_back(std::move(l));
  return true;
}

}  // namespace hoop::shm
