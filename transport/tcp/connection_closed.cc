// A peer that closed while the stream's head waits for its receive.
//
// The stream is ordered, and a header whose receive is not posted yet stalls it (connection.h).
// When the peer then closes, say because it finished its part of the last collective and left,
// everything it will ever send is already in our socket. Waiting behind the head would be wrong
// twice over: a receive posted for a later message (the mailbox always has one, for the next
// frame) would be taken for lost, and a receive for something the peer never sent would wait for
// the timeout. So the rest is read to the close at once, cut into messages and kept; a posted
// receive takes its message whenever it comes, in any order, and one the peer never sent fails
// with "connection closed". A message cut short by the close is lost, like the peer; an abort
// frame in the rest fails the connection with the peer's cause, as it would have in order.
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "transport/peer_watch.h"
#include "transport/tcp/connection.h"

namespace hoop {

void Connection::TakeRest(std::vector<Completion>* out) {
  if (!rest_known_) {
    if (!ReadRest(out)) return;
    ParseRest(out);
    if (failed()) return;
    rest_known_ = true;
  }
  AnswerFromRest(out);
}

bool Connection::ReadRest(std::vector<Completion>* out) {
  if (ahead_pos_ < ahead_end_) {
    rest_.append(ahead_.data() + ahead_pos_, ahead_end_ - ahead_pos_);
    ahead_pos_ = ahead_end_ = 0;
  }
  while (true) {
    const ssize_t n = ::recv(fd_.get(), ahead_.data(), ahead_.size(), MSG_DONTWAIT);
    if (n > 0) {
      rest_.append(ahead_.data(), static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return true;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return false;  // the close is reported first: rare
    // A reset after the peer's FIN (our own late frames reached its closed socket) ends the
    // stream as the close did: everything it sent is read already.
    if (errno == ECONNRESET) return true;
    Fail(Lost(std::string("after its close: ") + std::strerror(errno)), out);
    return false;
  }
}

void Connection::ParseRest(std::vector<Completion>* out) {
  Header h = hdr_;  // the stalled head
  size_t pos = 0;
  while (true) {
    if (h.len > rest_.size() - pos) break;  // cut short by the close
    if (h.kind == kAbort) {
      Fail(PeerAborted(peer_, rest_.substr(pos, std::min<size_t>(h.len, kMaxAbortText))), out);
      return;
    }
    parked_.push_back({h.tag, h.check, rest_.substr(pos, h.len)});
    pos += h.len;
    if (rest_.size() - pos < sizeof(Header)) break;
    std::memcpy(&h, rest_.data() + pos, sizeof(Header));
    pos += sizeof(Header);
    if (h.magic != kMagic || (h.kind != kData && h.kind != kAbort)) {
      Fail(Internal("peer " + std::to_string(peer_) + " (" + peer_addr_ + ") sent a corrupt frame before it closed"),
           out);
      return;
    }
  }
  std::string().swap(rest_);
  hdr_got_ = 0;
  stalled_ = false;
  readable_ = false;
}

void Connection::AnswerFromRest(std::vector<Completion>* out) {
  for (auto& entry : recvs_) {
    const uint64_t tag = entry.first;
    RecvOp& r = entry.second;
    auto p = std::find_if(parked_.begin(), parked_.end(), [tag](const Parked& m) { return m.tag == tag; });
    if (p == parked_.end()) {
      out->push_back({r.op_id, peer_, false, Lost("connection closed"), 0});
      continue;
    }
    if (p->check != r.check || p->payload.size() != r.len) {
      out->push_back(
          {r.op_id, peer_, false,
           FailedPrecondition("peer " + std::to_string(peer_) + " sent " + std::to_string(p->payload.size()) +
                              " bytes where " + std::to_string(r.len) + " were expected"),
           p->check});
    } else {
      if (r.len > 0) std::memcpy(r.data, p->payload.data(), r.len);
      out->push_back({r.op_id, peer_, false, Status::Ok(), 0});
    }
    parked_.erase(p);
  }
  recvs_.clear();
}

}  // namespace hoop
