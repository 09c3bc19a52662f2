// The device-memory parts of a shm Channel (channel.h): CUDA IPC descriptors instead of ring
// bytes for sends from device memory, the receiver's copy or reduction out of the peer's mapped
// memory on its device queue, ring bytes copied into device memory, and the completions that
// wait for the queue (receives) or for the peer's acknowledgement (descriptor sends).
#include <unistd.h>

#include <cstring>

#include "common/tsan.h"
#include "transport/shm/channel.h"

namespace hoop::shm {
namespace {
// One bounce chunk per device queue, shared by every channel on it (the queue's order keeps one
// use behind the last).
constexpr int kBounce = kScratchBounce;
}  // namespace

Status Channel::MarkDeviceSend(const Region& region, SendOp& op) {
  if (dq_ == nullptr) return Unimplemented("shm: device memory without CUDA access in this back end");
  HOOP_ASSIGN_OR_RETURN(DeviceQueue * q, dq_->Get(static_cast<int>(region.handle) - 1));
  HOOP_ASSIGN_OR_RETURN(op.mark, q->Mark());
  op.q = q;
  return Status::Ok();
}

bool Channel::PublishDescriptor(SendOp& s) {
  auto passed = s.q->Passed(s.mark);
  Status err = passed.status();
  if (err.ok() && !*passed) return false;  // the memory is still being written
  IpcRef ref;
  if (err.ok() && same_process_) {  // a thread of this process: the address is enough
    ref.pid = static_cast<int32_t>(::getpid());
    ref.base = reinterpret_cast<uint64_t>(s.data);
  } else if (err.ok()) {
    auto r = s.q->Export(s.data);
    err = r.status();
    if (r.ok()) {
      ref = *r;
    } else if (err.code() == Code::kInvalidArgument || err.code() == Code::kUnimplemented) {
      // Memory CUDA will not export (a stream-ordered pool's): its bytes go through the ring.
      s.copy = std::make_shared<std::vector<char>>(s.len);
      err = s.q->Copy(s.copy->data(), MemKind::kHost, s.data, MemKind::kCuda, s.len);
      if (err.ok()) err = s.q->Drain();
      if (err.ok()) {
        s.data = s.copy->data();
        s.q = nullptr;
        return true;
      }
    }
  }
  if (!err.ok()) {
    // Nothing goes out for it: the peer's receive stays unmatched, and this rank's run ends
    // with the error (and aborts the peers).
    deferred_.push_back(
        {s.op_id, peer_, true, err.WithContext("shm: sending device memory to rank " + std::to_string(peer_)), 0});
    return true;
  }
  TsanRelease(s.data);  // what wrote the memory happens before the peer reads it
  WriteSlot(reinterpret_cast<const char*>(&ref), s.len, 0, sizeof ref, s.tag, false, kSlotDevice);
  unacked_.push_back({s.op_id, ++described_, s.data});
  return true;
}

StatusOr<DeviceQueue*> Channel::RecvQueue(int device) const {
  if (dq_ == nullptr)
    return Unimplemented("rank " + std::to_string(peer_) +
                         " sent device memory (CUDA IPC), and this back end has no CUDA access");
  return device >= 0 ? dq_->Get(device) : dq_->Any();
}

Status Channel::LandDescriptor(const SlotHeader& h) {
  const auto ctx = [&](const Status& s) {
    return s.WithContext("shm: receiving rank " + std::to_string(peer_) + "'s device memory (CUDA IPC)");
  };
  IpcRef ref;
  if (h.len != sizeof ref) return ctx(Internal("a descriptor of " + std::to_string(h.len) + " bytes"));
  std::memcpy(&ref, reinterpret_cast<const char*>(&h) + 64, sizeof ref);
  auto q = RecvQueue(cur_.device);
  if (!q.ok()) return ctx(q.status());
  auto m = (*q)->Open(ref);
  if (!m.ok()) return ctx(m.status());
  cur_src_ = m->ptr;
  TsanAcquire(m->ptr);
  const size_t n = cur_.len;
  Status s;
  if (cur_.sink && cur_.device >= 0) {
    // Reduced or copied where it lies, unless it lies on another device: then to this one first.
    const char* src = m->ptr;
    if (!m->local) {
      auto b = (*q)->Scratch(kBounce, n);
      s = b.status();
      if (s.ok()) s = (*q)->Copy(*b, MemKind::kCuda, m->ptr, MemKind::kCuda, n);
      src = b.ok() ? *b : nullptr;
    }
    if (s.ok()) cur_.sink->Consume(0, src, n);
  } else if (cur_.sink) {
    // A host sink (this rank's buffers are on the host): the bytes come over first, then go to the
    // sink as ring bytes would.
    host_bounce_.resize(n);
    s = (*q)->Copy(host_bounce_.data(), MemKind::kHost, m->ptr, MemKind::kCuda, n);
    if (s.ok()) s = (*q)->Drain();
    if (s.ok()) cur_.sink->Consume(0, host_bounce_.data(), n);
  } else {
    s = (*q)->Copy(cur_.data, cur_.kind, m->ptr, MemKind::kCuda, n);
  }
  return s.ok() ? s : ctx(s);
}

Status Channel::LandOnDevice(const RecvOp& r, const char* payload, size_t offset, size_t len) {
  const auto ctx = [&](const Status& s) {
    return s.WithContext("shm: copying rank " + std::to_string(peer_) + "'s message to device memory");
  };
  auto q = RecvQueue(r.device);
  if (!q.ok()) return ctx(q.status());
  if (!r.sink) {
    Status s = (*q)->Copy(r.data + offset, MemKind::kCuda, payload, MemKind::kHost, len);
    return s.ok() ? s : ctx(s);
  }
  auto b = (*q)->Scratch(kBounce, kInlineMax);
  if (!b.ok()) return ctx(b.status());
  Status s = (*q)->Copy(*b, MemKind::kCuda, payload, MemKind::kHost, len);
  if (!s.ok()) return ctx(s);
  r.sink->Consume(offset, *b, len);
  return Status::Ok();
}

bool Channel::ProgressDevice(std::vector<Completion>* out) {
  bool moved = false, acked = false;
  while (!landing_.empty()) {
    Landing& l = landing_.front();
    Status st = l.error;
    if (st.ok()) {
      auto passed = l.q->Passed(l.mark);
      if (passed.ok() && !*passed) break;
      st = passed.status();
    }
    out->push_back({l.op_id, peer_, false, st, 0});
    if (l.ack) {  // done reading the peer's memory (or never will): its send may complete
      if (l.src) TsanRelease(l.src);
      in_->acked.store(++acked_, std::memory_order_release);
      acked = true;
    }
    landing_.pop_front();
    moved = true;
  }
  if (acked) Ring(peer_bell_);
  if (!unacked_.empty()) {
    if (unacked_.front().number > peer_acked_) peer_acked_ = out_->acked.load(std::memory_order_acquire);
    while (!unacked_.empty() && unacked_.front().number <= peer_acked_) {
      TsanAcquire(unacked_.front().data);  // the peer's reads happen before this memory is reused
      out->push_back({unacked_.front().op_id, peer_, true, Status::Ok(), 0});
      unacked_.pop_front();
      moved = true;
    }
  }
  return moved;
}

}  // namespace hoop::shm
