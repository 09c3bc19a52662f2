#include "transport/tcp/connection.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>

#include "transport/peer_watch.h"

namespace hoop {
namespace {
constexpr uint32_t kMagic = 0x48505431;  // "HPT1"
constexpr uint32_t kData = 1;
constexpr uint32_t kAbort = 2;
constexpr size_t kMaxAbortText = 4096;
constexpr int kMaxIov = 32;
}  // namespace

Connection::Connection(int peer, Fd fd, std::string peer_addr)
    : peer_(peer), fd_(std::move(fd)), peer_addr_(std::move(peer_addr)) {}

void Connection::PostSend(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) {
  if (failed()) {
    deferred_.push_back({op_id, peer_, true, failure_, 0});
    return;
  }
  SendOp op;
  op.header = {kMagic, kData, tag.match, len, tag.check};
  op.data = static_cast<const char*>(region.base) + offset;
  op.len = len;
  op.op_id = op_id;
  sends_.push_back(std::move(op));
}

void Connection::PostRecv(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) {
  if (failed()) {
    deferred_.push_back({op_id, peer_, false, failure_, 0});
    return;
  }
  recvs_[tag.match] = RecvOp{static_cast<char*>(region.base) + offset, len, tag.check, op_id};
}

void Connection::QueueAbort(const std::string& cause) {
  if (!send_ok_) return;
  SendOp op;
  op.owned = cause.substr(0, kMaxAbortText);
  op.header = {kMagic, kAbort, 0, op.owned.size(), 0};
  op.len = op.owned.size();
  op.op_id = 0;
  op.internal = true;
  sends_.push_back(std::move(op));
  sends_.back().data = sends_.back().owned.data();  // point into the moved string
}

void Connection::Shutdown() { ::shutdown(fd_.get(), SHUT_RDWR); }

void Connection::OnEvents(uint32_t ev) {
  if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) readable_ = true;
  if (ev & EPOLLOUT) writable_ = true;
  if (ev & (EPOLLRDHUP | EPOLLHUP)) peer_closed_ = true;
  if (ev & EPOLLERR) socket_error_ = true;
}

void Connection::FailSocket(const std::string& what, std::vector<Completion>* out) {
  // Whatever the peer managed to send before the connection broke is read first: an abort
  // frame there names the real cause, which beats "broken pipe".
  readable_ = true;
  ReadSome(out);
  if (!failed())
    Fail(Unavailable("lost peer " + std::to_string(peer_) + " (" + peer_addr_ + "): " + what), out);
  send_ok_ = false;
}

void Connection::Fail(const Status& why, std::vector<Completion>* out) {
  if (why.code() == Code::kUnavailable) send_ok_ = false;  // the socket itself broke
  if (failed()) return;
  failure_ = why;
  for (auto& s : sends_)
    if (!s.internal) out->push_back({s.op_id, peer_, true, why, 0});
  sends_.clear();
  // An abort frame being read is this connection's own, not a receive anyone posted.
  if (in_payload_ && hdr_.kind == kData) out->push_back({current_.op_id, peer_, false, why, 0});
  in_payload_ = false;
  for (auto& [tag, r] : recvs_) out->push_back({r.op_id, peer_, false, why, 0});
  recvs_.clear();
}

void Connection::Progress(std::vector<Completion>* out) {
  if (!deferred_.empty()) {
    out->insert(out->end(), deferred_.begin(), deferred_.end());
    deferred_.clear();
  }
  if (socket_error_ && !failed()) {
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) FailSocket(std::strerror(err), out);
    socket_error_ = false;
  }
  if (failed()) {
    if (send_ok_ && writable_ && !sends_.empty()) WriteSome(out);  // abort frames only
    return;
  }
  if (writable_ && !sends_.empty()) WriteSome(out);
  if (readable_ && !failed()) ReadSome(out);
  // A peer that closed its end after sending what we are stalled on (say it finished the job)
  // has done nothing wrong: that message is consumed once its receive is posted. Only a posted
  // receive that is not the stream's head can never be satisfied any more.
  if (!failed() && peer_closed_ && stalled_ && !recvs_.empty())
    Fail(Unavailable("lost peer " + std::to_string(peer_) + " (" + peer_addr_ +
                     "): connection closed"), out);
}

void Connection::WriteSome(std::vector<Completion>* out) {
  while (!sends_.empty()) {
    iovec iov[kMaxIov];
    int n_iov = 0;
    for (auto it = sends_.begin(); it != sends_.end() && n_iov + 2 <= kMaxIov; ++it) {
      size_t skip = it->done;
      if (skip < sizeof(Header)) {
        iov[n_iov++] = {reinterpret_cast<char*>(&it->header) + skip, sizeof(Header) - skip};
        skip = 0;
      } else {
        skip -= sizeof(Header);
      }
      if (it->len > skip) iov[n_iov++] = {const_cast<char*>(it->data) + skip, it->len - skip};
      if (it->len > (256 << 10)) break;  // a big payload fills the socket on its own
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(n_iov);
    ssize_t n = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        writable_ = false;
        return;
      }
      FailSocket(std::string("send: ") + std::strerror(errno), out);
      return;
    }
    size_t left = static_cast<size_t>(n);
    while (left > 0 && !sends_.empty()) {
      SendOp& op = sends_.front();
      size_t total = sizeof(Header) + op.len;
      size_t take = std::min(left, total - op.done);
      op.done += take;
      left -= take;
      if (op.done == total) {
        if (!op.internal) out->push_back({op.op_id, peer_, true, Status::Ok(), 0});
        sends_.pop_front();
      }
    }
    // Zero-length messages already written in full need popping too.
    while (!sends_.empty() && sends_.front().done == sizeof(Header) + sends_.front().len) {
      if (!sends_.front().internal) out->push_back({sends_.front().op_id, peer_, true, Status::Ok(), 0});
      sends_.pop_front();
    }
  }
}

bool Connection::MatchHeader(std::vector<Completion>* out) {
  if (hdr_.magic != kMagic) {
    Fail(Internal("peer " + std::to_string(peer_) + " sent a corrupt frame"), out);
    return false;
  }
  if (hdr_.kind != kData && hdr_.kind != kAbort) {
    Fail(Internal("peer " + std::to_string(peer_) + " (" + peer_addr_ + ") sent a frame of unknown kind " +
                  std::to_string(hdr_.kind)), out);
    return false;
  }
  if (hdr_.kind == kAbort) {
    if (hdr_.len > kMaxAbortText) {
      Fail(Internal("peer " + std::to_string(peer_) + " sent an oversized abort frame"), out);
      return false;
    }
    abort_text_.assign(hdr_.len, '\0');
    current_ = RecvOp{abort_text_.data(), hdr_.len, 0, 0};
  } else {
    auto it = recvs_.find(hdr_.tag);
    if (it == recvs_.end()) {
      stalled_ = true;
      return false;
    }
    stalled_ = false;
    current_ = it->second;
    recvs_.erase(it);
    if (hdr_.check != current_.check || hdr_.len != current_.len) {
      Completion c{current_.op_id, peer_, false,
                   FailedPrecondition("peer " + std::to_string(peer_) + " sent " +
                                      std::to_string(hdr_.len) + " bytes where " +
                                      std::to_string(current_.len) + " were expected"),
                   hdr_.check};
      out->push_back(c);
      Fail(FailedPrecondition("stream from peer " + std::to_string(peer_) + " is out of step"), out);
      return false;
    }
  }
  in_payload_ = true;
  payload_got_ = 0;
  return true;
}

void Connection::ReadSome(std::vector<Completion>* out) {
  while (!failed()) {
    if (!in_payload_) {
      if (stalled_ || hdr_got_ == sizeof(Header)) {
        if (!MatchHeader(out)) return;
      } else {
        ssize_t n = ::recv(fd_.get(), reinterpret_cast<char*>(&hdr_) + hdr_got_,
                           sizeof(Header) - hdr_got_, MSG_DONTWAIT);
        if (n == 0) {
          Fail(Unavailable("lost peer " + std::to_string(peer_) + " (" + peer_addr_ +
                           "): connection closed"), out);
          return;
        }
        if (n < 0) {
          if (errno == EINTR) continue;
          if (errno == EAGAIN || errno == EWOULDBLOCK) {
            readable_ = false;
            return;
          }
          Fail(Unavailable("lost peer " + std::to_string(peer_) + " (" + peer_addr_ + "): " +
                           std::strerror(errno)), out);
          return;
        }
        hdr_got_ += static_cast<size_t>(n);
        if (hdr_got_ < sizeof(Header)) continue;
        if (!MatchHeader(out)) return;
      }
    }
    // In a payload: read straight into the posted buffer.
    while (payload_got_ < current_.len) {
      ssize_t n = ::recv(fd_.get(), current_.data + payload_got_, current_.len - payload_got_, MSG_DONTWAIT);
      if (n > 0) {
        payload_got_ += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        readable_ = false;
        return;
      }
      Fail(Unavailable("lost peer " + std::to_string(peer_) + " (" + peer_addr_ + "): " +
                       (n == 0 ? std::string("connection closed") : std::strerror(errno))), out);
      return;
    }
    in_payload_ = false;
    hdr_got_ = 0;
    if (hdr_.kind == kAbort) {
      Fail(PeerAborted(peer_, abort_text_), out);
      return;
    }
    out->push_back({current_.op_id, peer_, false, Status::Ok(), 0});
  }
}

}  // namespace hoop
