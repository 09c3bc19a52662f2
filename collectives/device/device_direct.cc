// CommCore::DirectQueue and RunDirect: device buffers of ranks on one host moved by the
// transport itself (CUDA IPC over shm, transport/shm/channel.h) and reduced on the device: the
// executor's device run (executor.h), with no trip through host memory.
//
// Chosen by each rank on what it alone knows (its buffers, its transport), which is safe because
// it changes no message: a peer that stages through host memory exchanges the same messages, as
// bytes in the ring where this rank's go as descriptors, and both ends take either form.
// Every collective with every buffer this rank uses on one device: the collective's own code
// runs as on the host, its copies and working memory on the queue (CommCore::Place,
// Scratch). Not a compressed allreduce (the codec runs on the host), and not on a CUDA stream
// (such a call's device buffers are staged on the caller's stream, stream_staging.h): those stage
// (RunOnDevice, device_route.cc, chooses).
#include "collectives/core/comm_core.h"
#include "common/device.h"

namespace hoop {

int CommCore::DeviceOf(const void* p) const {
  if (opts_.device_access) return opts_.device_access->device_of(p);
  const MemInfo m = QueryMemory(p);
  return m.kind == MemKind::kCuda ? m.device : -1;
}

Buffer CommCore::Located(Buffer b) const {
  if (b.kind == MemKind::kCuda && b.device < 0 && b.data != nullptr) b.device = DeviceOf(b.data);
  return b;
}

std::string CommCore::DeviceRoute(int device) {
  return transport_->DeviceQueueFor(device) ? "by CUDA IPC" : "staged through pinned host memory";
}

DeviceQueue* CommCore::DirectQueue(const Op& op) {
  if (op.kind == CollKind::kBarrier || opts_.size == 1 || op.residual != nullptr) return nullptr;
  int device = -1;
  for (const Buffer* b : {&op.in, &op.out}) {
    if (!(b == &op.in ? UsesIn(op) : UsesOut(op)) || b->count == 0) continue;
    if (b->kind != MemKind::kCuda) return nullptr;
    const int d = b->device;
    if (d < 0 || (device >= 0 && d != device)) return nullptr;
    device = d;
  }
  if (device < 0) return nullptr;
  DeviceQueue* q = transport_->DeviceQueueFor(device);
  if (q == nullptr || (Reduces(op.kind) && !q->CanReduce(op.in.dtype, op.op))) return nullptr;
  return q;
}

Status CommCore::RunDirect(const Op& op, uint32_t seq, DeviceQueue& q) {
  // After the caller's work before the call; then the collective's own code, whose placements,
  // working copies and schedule all go on the queue (Place, Scratch, RunSchedule).
  Status run = q.After(op.ready.event);
  if (run.ok()) {
    direct_ = &q;
    direct_error_ = Status::Ok();
    run = RunCollective(op, seq);  // its errors name the call
    direct_ = nullptr;
  } else {
    run = run.WithContext("rank " + std::to_string(opts_.rank) + ": " + CollKindName(op.kind) +
                          ": ordering after the caller's CUDA work");
  }
  // Whatever happened, nothing of the call runs on after it returns: the plain form synchronises.
  Status drained = q.Drain();
  if (!run.ok()) return run;
  return drained.WithContext("rank " + std::to_string(opts_.rank) + ": " + CollKindName(op.kind) +
                             ": device memory by CUDA IPC");
}

}  // namespace hoop
