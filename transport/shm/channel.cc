#include "transport/shm/channel.h"

#include <algorithm>
#include <cstring>

namespace hoop::shm {

Channel::Channel(int peer, int pid, RingHeader* in, RingHeader* out, Doorbell* peer_bell, bool cma)
    : peer_(peer), pid_(pid), in_(in), out_(out), peer_bell_(peer_bell), cma_(cma) {
  tail_ = out_->tail.load(std::memory_order_relaxed);
  head_ = in_->head.load(std::memory_order_relaxed);
}

void Channel::PostSend(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) {
  if (!failure_.ok()) {
    deferred_.push_back({op_id, peer_, true, failure_, 0});
    return;
  }
  sends_.push_back({static_cast<const char*>(region.base) + offset, len, 0, tag, op_id});
}

void Channel::PostRecv(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) {
  if (!failure_.ok()) {
    deferred_.push_back({op_id, peer_, false, failure_, 0});
    return;
  }
  recvs_.push_back({static_cast<char*>(region.base) + offset, len, tag, op_id});
}

bool Channel::Progress(std::vector<Completion>* out) {
  bool moved = false;
  if (!deferred_.empty()) {
    out->insert(out->end(), deferred_.begin(), deferred_.end());
    deferred_.clear();
    moved = true;
  }
  if (!failure_.ok()) return moved;
  moved |= ProgressRecvs(out);
  if (!failure_.ok()) return true;
  moved |= ProgressSends(out);
  if (failure_.ok() && in_->aborted.load(std::memory_order_acquire)) {
    Fail(Aborted("rank " + std::to_string(peer_) + " aborted: " +
                 std::string(in_->cause, strnlen(in_->cause, sizeof(in_->cause)))), out);
    return true;
  }
  if (exited_ && failure_.ok()) {
    // The ring holds all the peer will ever send: a receive it cannot satisfy now never will be.
    bool starving = !recvs_.empty() || in_msg_;
    if (starving || !sends_.empty() || !awaiting_.empty()) Fail(exit_cause_, out);
  }
  return moved;
}

bool Channel::ProgressSends(std::vector<Completion>* out) {
  // Nothing to send or to hear back about: leave the peer's `head` line alone (reading it on
  // every spin would pull it across cores each time the peer consumes).
  if (sends_.empty() && awaiting_.empty()) return false;
  bool moved = false;
  uint64_t head = out_->head.load(std::memory_order_acquire);
  while (!awaiting_.empty() && awaiting_.front().slot < head) {
    out->push_back({awaiting_.front().op_id, peer_, true, Status::Ok(), 0});
    awaiting_.pop_front();
    moved = true;
  }
  bool published = false;
  while (!sends_.empty() && tail_ - head < kSlots) {
    SendOp& s = sends_.front();
    auto* h = reinterpret_cast<SlotHeader*>(Segment::slot(out_, tail_));
    h->match = s.tag.match;
    h->check = s.tag.check;
    h->total = s.len;
    h->offset = s.sent;
    if (cma_ && s.len > kInlineMax) {
      h->kind = kCma;
      h->src = reinterpret_cast<uint64_t>(s.data);
      h->len = 0;
      awaiting_.push_back({tail_, s.op_id});
      s.sent = s.len;
    } else {
      size_t n = std::min(kInlineMax, s.len - s.sent);
      h->kind = kInline;
      h->len = static_cast<uint32_t>(n);
      std::memcpy(reinterpret_cast<char*>(h) + 64, s.data + s.sent, n);
      s.sent += n;
      if (s.sent == s.len) out->push_back({s.op_id, peer_, true, Status::Ok(), 0});
    }
    ++tail_;
    out_->tail.store(tail_, std::memory_order_release);
    published = true;
    if (s.sent == s.len) sends_.pop_front();
    if (tail_ - head >= kSlots) head = out_->head.load(std::memory_order_acquire);
  }
  if (published) Ring(peer_bell_);
  return moved || published;
}

bool Channel::ProgressRecvs(std::vector<Completion>* out) {
  bool consumed = false;
  uint64_t tail = in_->tail.load(std::memory_order_acquire);
  while (head_ != tail) {
    auto* h = reinterpret_cast<const SlotHeader*>(Segment::slot(in_, head_));
    if (!in_msg_) {
      auto it = std::find_if(recvs_.begin(), recvs_.end(), [&](const RecvOp& r) { return r.tag.match == h->match; });
      if (it == recvs_.end()) break;  // stalled until a receive for this message is posted
      cur_ = *it;
      recvs_.erase(it);
      if (h->check != cur_.tag.check || h->total != cur_.len) {
        out->push_back({cur_.op_id, peer_, false,
                        FailedPrecondition("peer " + std::to_string(peer_) + " sent " + std::to_string(h->total) +
                                           " bytes where " + std::to_string(cur_.len) + " were expected"),
                        h->check});
        Fail(FailedPrecondition("stream from peer " + std::to_string(peer_) + " is out of step"), out);
        return true;
      }
      in_msg_ = true;
      got_ = 0;
    }
    if (h->kind == kCma) {
      Status s = CmaRead(pid_, cur_.data, h->src, cur_.len);
      if (!s.ok()) {
        // A peer that gave up may have freed the buffer it offered: its own cause is the news.
        if (in_->aborted.load(std::memory_order_acquire)) break;
        Fail(Unavailable("lost peer " + std::to_string(peer_) + ": " + s.message()), out);
        return true;
      }
      got_ = cur_.len;
    } else {
      std::memcpy(cur_.data + h->offset, reinterpret_cast<const char*>(h) + 64, h->len);
      got_ += h->len;
    }
    ++head_;
    in_->head.store(head_, std::memory_order_release);
    consumed = true;
    if (got_ == cur_.len) {
      in_msg_ = false;
      out->push_back({cur_.op_id, peer_, false, Status::Ok(), 0});
    }
  }
  // The peer may be waiting for ring space or for a CMA copy to finish.
  if (consumed) Ring(peer_bell_);
  return consumed;
}

void Channel::PeerExited(const Status& why, std::vector<Completion>* out) {
  exited_ = true;
  exit_cause_ = why;
  Progress(out);
}

void Channel::Fail(const Status& why, std::vector<Completion>* out) {
  if (!failure_.ok()) return;
  failure_ = why;
  for (auto& s : sends_) out->push_back({s.op_id, peer_, true, why, 0});
  for (auto& a : awaiting_) out->push_back({a.op_id, peer_, true, why, 0});
  for (auto& r : recvs_) out->push_back({r.op_id, peer_, false, why, 0});
  if (in_msg_) out->push_back({cur_.op_id, peer_, false, why, 0});
  sends_.clear();
  awaiting_.clear();
  recvs_.clear();
  in_msg_ = false;
}

void Channel::Abort(const std::string& cause) {
  if (out_->aborted.load(std::memory_order_relaxed)) return;
  size_t n = std::min(cause.size(), sizeof(out_->cause) - 1);
  std::memcpy(out_->cause, cause.data(), n);
  out_->cause[n] = '\0';
  out_->aborted.store(1, std::memory_order_release);
  Ring(peer_bell_);
}

}  // namespace hoop::shm
