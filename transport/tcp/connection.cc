#include "transport/tcp/connection.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>

#include "transport/peer_watch.h"

namespace hoop {
namespace {
constexpr int kMaxIov = 32;
constexpr size_t kReadAhead = 16 * 1024;
}  // namespace

Connection::Connection(int peer, Fd fd, std::string peer_addr)
    : peer_(peer), fd_(std::move(fd)), peer_addr_(std::move(peer_addr)), ahead_(kReadAhead) {}

int64_t Connection::Retransmits() const {
  tcp_info info{};
  socklen_t len = sizeof info;
  if (!fd_.valid() || ::getsockopt(fd_.get(), IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return -1;
  return info.tcpi_total_retrans;
}

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
  // A message held whole (held.cc) is taken at once, also after the connection failed.
  if (!held_.empty() &&
      TakeHeld(RecvOp{static_cast<char*>(region.base) + offset, len, tag.check, op_id}, tag.match, &deferred_))
    return;
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
  if (!reading_rest_) ReadSome(out);
  if (!failed()) Fail(Lost(what), out);
  send_ok_ = false;
}

void Connection::Fail(const Status& why, std::vector<Completion>* out) {
  if (why.code() == Code::kUnavailable) send_ok_ = false;  // the socket itself broke
  if (failed()) return;
  failure_ = why;
  for (auto& s : sends_)
    if (!s.internal) out->push_back({s.op_id, peer_, true, why, 0});
  sends_.clear();
  // An abort frame being read is this connection's own, not a receive anyone posted; nor is a
  // message being held, which is lost half read.
  if (in_payload_ && hdr_.kind == kData && !holding_) out->push_back({current_.op_id, peer_, false, why, 0});
  if (holding_) {
    held_bytes_ -= held_.back().bytes.size();
    held_.pop_back();
    holding_ = false;
  }
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
  if (!reading_rest_ && HasInput() && !failed()) ReadSome(out);
  // A peer that closed its end after sending what we are stalled on (say it finished the job)
  // has done nothing wrong: the rest of what it sent is read and kept for its receives.
  if (!failed() && peer_closed_ && stalled_) reading_rest_ = true;
  if (reading_rest_ && !failed()) TakeRest(out);
}

Status Connection::Lost(const std::string& what) const {
  return Unavailable("lost peer " + std::to_string(peer_) + " (" + peer_addr_ + "): " + what);
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
                  std::to_string(hdr_.kind)),
         out);
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
      stalled_ = !Hold();  // held (held.cc), or nothing more is read until its receive comes
      if (stalled_) return false;
      in_payload_ = true;
      payload_got_ = 0;
      return true;
    }
    stalled_ = false;
    current_ = it->second;
    recvs_.erase(it);
    if (hdr_.check != current_.check || hdr_.len != current_.len) {
      Completion c{current_.op_id, peer_, false,
                   FailedPrecondition("peer " + std::to_string(peer_) + " sent " + std::to_string(hdr_.len) +
                                      " bytes where " + std::to_string(current_.len) + " were expected"),
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

size_t Connection::RecvInto(char* dst, size_t cap, std::vector<Completion>* out) {
  while (true) {
    ssize_t n = ::recv(fd_.get(), dst, cap, MSG_DONTWAIT);
    if (n > 0) {
      // Short: the socket is empty now, and edge-triggered epoll reports whatever comes next;
      // but a close it reported already must still be read (recv's 0) to be noticed.
      if (static_cast<size_t>(n) < cap && !peer_closed_) readable_ = false;
      return static_cast<size_t>(n);
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      readable_ = false;
      return 0;
    }
    Fail(Lost(n == 0 ? std::string("connection closed") : std::strerror(errno)), out);
    return 0;
  }
}

bool Connection::ReadAhead(std::vector<Completion>* out) {
  ahead_pos_ = ahead_end_ = 0;
  if (!readable_) return false;
  ahead_end_ = RecvInto(ahead_.data(), ahead_.size(), out);
  return ahead_end_ > 0;
}

void Connection::ReadSome(std::vector<Completion>* out) {
  while (!failed()) {
    if (!in_payload_) {
      while (hdr_got_ < sizeof(Header)) {
        if (ahead_pos_ == ahead_end_ && !ReadAhead(out)) return;
        const size_t take = std::min(sizeof(Header) - hdr_got_, ahead_end_ - ahead_pos_);
        std::memcpy(reinterpret_cast<char*>(&hdr_) + hdr_got_, ahead_.data() + ahead_pos_, take);
        ahead_pos_ += take;
        hdr_got_ += take;
      }
      if (!MatchHeader(out)) return;
    }
    // In a payload: first what was read ahead, then (if much is left) straight into the buffer.
    while (payload_got_ < current_.len) {
      const size_t left = current_.len - payload_got_;
      if (ahead_pos_ < ahead_end_) {
        const size_t take = std::min(left, ahead_end_ - ahead_pos_);
        std::memcpy(current_.data + payload_got_, ahead_.data() + ahead_pos_, take);
        ahead_pos_ += take;
        payload_got_ += take;
        continue;
      }
      if (left >= ahead_.size()) {
        if (!readable_) return;
        const size_t n = RecvInto(current_.data + payload_got_, left, out);
        if (n == 0) return;
        payload_got_ += n;
        continue;
      }
      if (!ReadAhead(out)) return;
    }
    in_payload_ = false;
    hdr_got_ = 0;
    if (hdr_.kind == kAbort) {
      Fail(PeerAborted(peer_, abort_text_), out);
      return;
    }
    if (holding_) {
      HeldDone(out);
      continue;
    }
    out->push_back({current_.op_id, peer_, false, Status::Ok(), 0});
  }
}

}  // namespace hoop
