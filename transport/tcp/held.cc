// Messages held for receives not posted yet, on connections several communicators share.
//
// A header whose receive is not posted stalls the connection (connection.h): right for one
// communicator, whose ranks all post in one order, and a deadlock for two whose ranks run them
// in different orders (rank A's dup message sits at the head of the link while rank B waits, on
// the world, for a message behind it, and A waits for B's world reply before it posts); and for
// one communicator whose rank waits on point-to-point traffic before it joins a collective its
// peer already started. Once the hub has a second view it asks for this (Transport::HoldEarly),
// and the mailbox for one peer while a call with it is open (AskHold; not for the mailbox's own
// messages, whose receives it posts as their frames come): the payload is read into memory
// of its own, up to the cap in all (past it the link stalls as before: the sender is then far
// ahead), and copied into its receive when that is posted, in any order, by the same matching
// rules (tag, then length and check) as at the head of the stream. A held message that was read
// whole stays receivable after the connection fails or closes, like the parked rest of a closed
// stream (connection_closed.cc).
#include <algorithm>
#include <cstring>

#include "transport/tcp/connection.h"
#include "transport/tcp/tcp_transport.h"

namespace hoop {

bool Connection::Hold() {
  const size_t cap = holds_.CapFor(hdr_.tag);
  if (cap == 0 || hdr_.len > cap - std::min(cap, held_bytes_)) return false;
  held_.push_back({hdr_.tag, hdr_.check, std::vector<char>(hdr_.len), false});
  held_bytes_ += hdr_.len;
  current_ = RecvOp{held_.back().bytes.data(), hdr_.len, hdr_.check, 0};
  holding_ = true;
  return true;
}

bool Connection::HeldDone(std::vector<Completion>* out) {
  holding_ = false;
  held_.back().whole = true;
  auto it = recvs_.find(held_.back().tag);
  if (it == recvs_.end()) return false;
  const RecvOp r = it->second;
  recvs_.erase(it);
  TakeHeld(r, held_.back().tag, out);
  return true;
}

bool Connection::TakeHeld(const RecvOp& r, uint64_t tag, std::vector<Completion>* out) {
  auto h = std::find_if(held_.begin(), held_.end(), [tag](const Held& m) { return m.whole && m.tag == tag; });
  if (h == held_.end()) return false;
  const size_t len = h->bytes.size();
  if (h->check != r.check || len != r.len) {
    out->push_back({r.op_id, peer_, false,
                    FailedPrecondition("peer " + std::to_string(peer_) + " sent " + std::to_string(len) +
                                       " bytes where " + std::to_string(r.len) + " were expected"),
                    h->check});
    held_bytes_ -= len;
    held_.erase(h);
    Fail(FailedPrecondition("stream from peer " + std::to_string(peer_) + " is out of step"), out);
    return true;
  }
  if (len > 0) std::memcpy(r.data, h->bytes.data(), len);
  out->push_back({r.op_id, peer_, false, Status::Ok(), 0});
  held_bytes_ -= len;
  held_.erase(h);
  return true;
}

void TcpTransport::HoldEarly(size_t cap) {
  hold_cap_ = cap;
  for (auto& [peer, c] : conns_) c->HoldEarly(cap);
}

}  // namespace hoop
