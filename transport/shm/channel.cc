#include "transport/shm/channel.h"

#include <algorithm>
#include <cstring>

#include "common/stream_copy.h"
#include "transport/peer_watch.h"

namespace hoop::shm {

Channel::Channel(int peer, RingHeader* in, RingHeader* out, Doorbell* peer_bell, bool crowded, DeviceQueues* dq,
                 bool same_process)
    : peer_(peer), in_(in), out_(out), peer_bell_(peer_bell), crowded_(crowded), dq_(dq), same_process_(same_process) {
  set_fast(this);
  tail_ = out_->tail.load(std::memory_order_relaxed);
  peer_acked_ = out_->acked.load(std::memory_order_relaxed);
  described_ = peer_acked_;
  acked_ = in_->acked.load(std::memory_order_relaxed);
  peer_head_ = out_->head.load(std::memory_order_relaxed);
  head_ = in_->head.load(std::memory_order_relaxed);
}

void Channel::PostSend(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) {
  if (!failure_.ok()) {
    deferred_.push_back({op_id, peer_, true, failure_, 0});
    return;
  }
  SendOp op{static_cast<const char*>(region.base) + offset, len, 0, tag, op_id, region.large && len >= kStreamMin};
  if (region.kind == MemKind::kCuda && len > 0) {  // an empty message has no bytes to describe
    if (Status s = MarkDeviceSend(region, op); !s.ok()) {
      deferred_.push_back({op_id, peer_, true, s, 0});
      return;
    }
  }
  sends_.push_back(std::move(op));
  // Nothing ahead of it and one slot long: into the ring now, where the peer may be looking for
  // it already, instead of at this rank's next Poll (the completion waits there in deferred_).
  if (sends_.size() == 1 && len <= kInlineMax && sends_.back().q == nullptr) ProgressSends(&deferred_);
}

void Channel::PostRecv(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) {
  const bool dev = region.kind == MemKind::kCuda && len > 0;
  const RecvOp r{static_cast<char*>(region.base) + offset,      len, tag, op_id, nullptr, region.kind,
                 dev ? static_cast<int>(region.handle) - 1 : -1};
  if (!held_.empty() && TakeHeld(r, &deferred_)) return;  // held whole: taken also after a failure
  if (!failure_.ok()) {
    deferred_.push_back({op_id, peer_, false, failure_, 0});
    return;
  }
  recvs_.push_back(r);
}

bool Channel::PostRecvTo(RecvSink* sink, size_t len, size_t elem, Tag tag, uint64_t op_id) {
  if (elem == 0 || kInlineMax % elem != 0) return false;  // fragments must end on elements
  const RecvOp r{nullptr, len, tag, op_id, sink, MemKind::kHost, sink->device()};
  if (!held_.empty() && TakeHeld(r, &deferred_)) return true;
  if (!failure_.ok()) {
    deferred_.push_back({op_id, peer_, false, failure_, 0});
    return true;
  }
  recvs_.push_back(r);
  return true;
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
  if (!landing_.empty() || !unacked_.empty()) moved |= ProgressDevice(out);
  if (failure_.ok() && in_->aborted.load(std::memory_order_acquire)) {
    Fail(PeerAborted(peer_, std::string(in_->cause, strnlen(in_->cause, sizeof(in_->cause)))), out);
    return true;
  }
  if (exited_ && failure_.ok()) {
    // The ring holds all the peer will ever send. A message left at its head waits for its own
    // receive, which may not be posted yet (a collective posts in order, and the receives posted
    // now may be for the messages behind it): only once the ring is empty can a receive still
    // posted never be satisfied. A send never completes: nobody reads it.
    auto* h = reinterpret_cast<const SlotHeader*>(Segment::slot(in_, head_));
    bool empty = h->seq.load(std::memory_order_acquire) != head_ + 1;
    bool starving = empty && (!recvs_.empty() || in_msg_);
    if (starving || !sends_.empty() || !unacked_.empty()) Fail(exit_cause_, out);
  }
  return moved;
}

bool Channel::ProgressSends(std::vector<Completion>* out) {
  // Nothing to send: leave the peer's `head` line alone (reading it on every spin would pull it
  // across cores each time the peer consumes).
  if (sends_.empty()) return false;
  // The peer's `head` is read again only when the ring looks full by the last value read: each
  // read pulls the line back from the peer's core.
  if (tail_ - peer_head_ >= kSlots) peer_head_ = out_->head.load(std::memory_order_acquire);
  bool published = false;
  while (!sends_.empty() && tail_ - peer_head_ < kSlots) {
    SendOp& s = sends_.front();
    if (s.q != nullptr) {  // device memory: one descriptor slot, once the memory is written
      if (!PublishDescriptor(s)) break;
      if (s.q != nullptr) {  // published (or failed): done here; else it goes as bytes after all
        published = true;
        sends_.pop_front();
        if (tail_ - peer_head_ >= kSlots) peer_head_ = out_->head.load(std::memory_order_acquire);
        continue;
      }
    }
    size_t n = std::min(kInlineMax, s.len - s.sent);
    WriteSlot(s.data + s.sent, s.len, s.sent, n, s.tag, s.stream);
    s.sent += n;
    published = true;
    if (s.sent == s.len) {
      out->push_back({s.op_id, peer_, true, Status::Ok(), 0});
      sends_.pop_front();
    }
    if (tail_ - peer_head_ >= kSlots) peer_head_ = out_->head.load(std::memory_order_acquire);
  }
  if (published) Ring(peer_bell_);
  return published;
}

void Channel::WriteSlot(const char* data, size_t total, size_t offset, size_t n, Tag tag, bool stream, uint32_t flags) {
  auto* h = reinterpret_cast<SlotHeader*>(Segment::slot(out_, tail_));
  h->match = tag.match;
  h->check = tag.check;
  h->total = total;
  h->offset = offset;
  h->len = static_cast<uint32_t>(n);
  h->flags = flags;
  // A large message of an operation that outgrows the caches (Region::large) is streamed in
  // (non-temporal stores, then the fence inside CopyStreaming): the receiver reads it from
  // memory instead of pulling every line out of this core's cache, which measured up to 5x
  // slower when the host keeps the two cores far apart. Everything else stays in cache, where
  // the receiver finds it soonest: streaming the messages of a 1 MiB allreduce or alltoall
  // measured 1.5x slower (docs/PERF.md).
  char* payload = reinterpret_cast<char*>(h) + 64;
  if (stream)
    CopyStreaming(payload, data, n);
  else if (n > 0)
    std::memcpy(payload, data, n);  // an empty message may have no buffer
  h->seq.store(tail_ + 1, std::memory_order_release);
  ++tail_;
  out_->tail.store(tail_, std::memory_order_release);
}

bool Channel::SendCopies(const CopyMsg* msgs, size_t n) {
  if (!failure_.ok() || exited_ || !sends_.empty() || n > kSlots) return false;
  for (size_t i = 0; i < n; ++i)
    if (msgs[i].len > kInlineMax) return false;
  if (tail_ - peer_head_ + n > kSlots) {
    peer_head_ = out_->head.load(std::memory_order_acquire);
    if (tail_ - peer_head_ + n > kSlots) return false;
  }
  for (size_t i = 0; i < n; ++i)
    WriteSlot(static_cast<const char*>(msgs[i].data), msgs[i].len, 0, msgs[i].len, msgs[i].tag, false);
  Ring(peer_bell_);
  return true;
}

bool Channel::TakeNow(Tag tag, uint64_t op_id, unsigned spins, const NextRecv* then) {
  if (!failure_.ok() || in_msg_) return false;
  auto* h = reinterpret_cast<const SlotHeader*>(Segment::slot(in_, head_));
  // Only the seq word is read while waiting: the line stays in this core's cache until the
  // peer writes it.
  for (unsigned turn = crowded_ ? 0 : spins; h->seq.load(std::memory_order_acquire) != head_ + 1; --turn)
    if (turn == 0) return false;
  if (h->match != tag.match || h->check != tag.check || h->offset != 0 || h->len != h->total || h->flags != 0)
    return false;
  auto it = std::find_if(recvs_.begin(), recvs_.end(), [&](const RecvOp& r) { return r.op_id == op_id; });
  if (it == recvs_.end() || it->sink || it->tag.match != tag.match || it->len != h->total) return false;
  if (h->len > 0) std::memcpy(it->data, reinterpret_cast<const char*>(h) + 64, h->len);
  if (then) {  // kept in its place in the queue, for the stream's next message, into then->data
    it->tag = then->tag;
    it->data = static_cast<char*>(then->data);
  } else {
    recvs_.erase(it);
  }
  ++head_;
  in_->head.store(head_, std::memory_order_release);
  Ring(peer_bell_);  // the peer may be waiting for ring space
  return true;
}

bool Channel::Withdraw(uint64_t op_id) {
  auto it = std::find_if(recvs_.begin(), recvs_.end(), [&](const RecvOp& r) { return r.op_id == op_id; });
  if (it == recvs_.end()) return false;  // not posted, or its message has begun (cur_)
  recvs_.erase(it);
  return true;
}

bool Channel::ProgressRecvs(std::vector<Completion>* out) {
  bool consumed = false;
  while (true) {
    auto* h = reinterpret_cast<const SlotHeader*>(Segment::slot(in_, head_));
    if (h->seq.load(std::memory_order_acquire) != head_ + 1) break;  // not written yet
    if (!in_msg_) {
      auto it = std::find_if(recvs_.begin(), recvs_.end(), [&](const RecvOp& r) { return r.tag.match == h->match; });
      if (it == recvs_.end()) {
        if (!Hold(*h)) break;  // stalled until a receive for this message is posted
      } else {
        cur_ = *it;
        recvs_.erase(it);
      }
      if (!cur_held_ && (h->check != cur_.tag.check || h->total != cur_.len)) {
        out->push_back({cur_.op_id, peer_, false,
                        FailedPrecondition("peer " + std::to_string(peer_) + " sent " + std::to_string(h->total) +
                                           " bytes where " + std::to_string(cur_.len) + " were expected" +
                                           (h->total != cur_.len && h->check == cur_.tag.check
                                                ? std::string(" (ranks cut messages alike only where they agree on "
                                                              "HOOP_CHUNK_BYTES and HOOP_CUDA_IPC, and each sees a "
                                                              "CUDA device or none does)")
                                                : std::string())),
                        h->check});
        Fail(FailedPrecondition("stream from peer " + std::to_string(peer_) + " is out of step"), out);
        return true;
      }
      in_msg_ = true;
      got_ = 0;
      cur_landing_ = false;
      cur_error_ = Status::Ok();
      cur_src_ = nullptr;
    }
    const char* payload = reinterpret_cast<const char*>(h) + 64;
    const bool descriptor = (h->flags & kSlotDevice) != 0;
    // A message whose move to the device failed is read to its end and completes with the error.
    if (descriptor) {
      cur_error_ = LandDescriptor(*h);
    } else if (cur_.device >= 0) {
      if (cur_error_.ok()) cur_error_ = LandOnDevice(cur_, payload, h->offset, h->len);
    } else if (cur_.sink) {
      cur_.sink->Consume(h->offset, payload, h->len);
    } else if (h->len > 0) {
      std::memcpy(cur_.data + h->offset, payload, h->len);
    }
    cur_landing_ |= descriptor || cur_.device >= 0;
    got_ = descriptor ? cur_.len : got_ + h->len;
    ++head_;
    in_->head.store(head_, std::memory_order_release);
    consumed = true;
    if (got_ == cur_.len) {
      in_msg_ = false;
      if (cur_held_) {
        HeldDone(out);
        if (!failure_.ok()) return true;
        continue;
      }
      if (!cur_landing_) {
        out->push_back({cur_.op_id, peer_, false, Status::Ok(), 0});
        continue;
      }
      // Complete (and acknowledge a descriptor) in order, once the queue has done the work.
      Landing l{cur_.op_id, nullptr, 0, descriptor, descriptor ? cur_src_ : nullptr, cur_error_};
      if (cur_error_.ok()) {
        auto q = RecvQueue(cur_.device);
        auto mark = q.ok() ? (*q)->Mark() : StatusOr<uint64_t>(q.status());
        if (mark.ok())
          l.q = *q, l.mark = *mark;
        else
          l.error = mark.status();
      }
      landing_.push_back(std::move(l));
    }
  }
  // The peer may be waiting for ring space.
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
  for (auto& r : recvs_) out->push_back({r.op_id, peer_, false, why, 0});
  if (in_msg_ && !cur_held_) out->push_back({cur_.op_id, peer_, false, why, 0});
  if (in_msg_ && cur_held_) {  // lost half copied
    held_bytes_ -= held_.back().bytes.size();
    held_.pop_back();
    cur_held_ = false;
  }
  for (auto& u : unacked_) out->push_back({u.op_id, peer_, true, why, 0});
  for (auto& l : landing_) out->push_back({l.op_id, peer_, false, why, 0});
  sends_.clear();
  recvs_.clear();
  unacked_.clear();
  landing_.clear();
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
