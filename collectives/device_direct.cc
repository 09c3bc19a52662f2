// Communicator::DirectQueue and RunDirect: device buffers of ranks on one host moved by the
// transport itself (CUDA IPC over shm, transport/shm/channel.h) and reduced on the device: the
// executor's device run (executor.h), with no trip through host memory.
//
// Chosen by each rank on what it alone knows (its buffers, its transport), which is safe because
// it changes no message: a peer that stages through host memory exchanges the same messages, as
// bytes in the ring where this rank's go as descriptors, and both ends take either form.
// Allreduce, broadcast, allgather and reduce-scatter with every buffer this rank uses on one
// device, as the pipelined staging does; not compressed (the codec runs on the host), and not on
// a CUDA stream (such a call's device buffers are staged on the caller's stream,
// stream_staging.h). Everything else stages (device_staging.cc).
#include "collectives/communicator.h"
#include "common/device.h"

namespace hoop {

int Communicator::DeviceOf(const void* p) const {
  if (opts_.device_access) return opts_.device_access->device_of(p);
  const MemInfo m = QueryMemory(p);
  return m.kind == MemKind::kCuda ? m.device : -1;
}

DeviceQueue* Communicator::DirectQueue(const Op& op) {
  const bool kinds = op.kind == CollKind::kAllreduce || op.kind == CollKind::kBroadcast ||
                     op.kind == CollKind::kAllgather || op.kind == CollKind::kReduceScatter;
  if (!kinds || opts_.size == 1 || DescCount(op) == 0 || op.residual != nullptr) return nullptr;
  int device = -1;
  for (const Buffer* b : {&op.in, &op.out}) {
    if (!(b == &op.in ? UsesIn(op) : UsesOut(op))) continue;
    if (b->kind != MemKind::kCuda) return nullptr;
    const int d = DeviceOf(b->data);
    if (d < 0 || (device >= 0 && d != device)) return nullptr;
    device = d;
  }
  if (device < 0) return nullptr;
  DeviceQueue* q = transport_->DeviceQueueFor(device);
  const bool reduces = op.kind == CollKind::kAllreduce || op.kind == CollKind::kReduceScatter;
  if (q == nullptr || (reduces && !q->CanReduce(op.in.dtype, op.op))) return nullptr;
  return q;
}

Status Communicator::RunDirect(const Op& op, uint32_t seq, DeviceQueue& q) {
  const auto ctx = [&](const Status& s) {
    return s.WithContext("rank " + std::to_string(opts_.rank) + ": " + CollKindName(op.kind) +
                         ": device memory by CUDA IPC");
  };
  HOOP_ASSIGN_OR_RETURN(Algo algo, Resolve(op));
  if (op.kind == CollKind::kAllreduce) {
    HOOP_ASSIGN_OR_RETURN(Compression wire, WireFor(op));
    if (wire != Compression::kNone) return RunStaged(op, seq);
  }
  const bool bcast = op.kind == CollKind::kBroadcast, gather = op.kind == CollKind::kAllgather;
  const bool scatter = op.kind == CollKind::kReduceScatter;
  const bool root = bcast && op.root == opts_.rank;
  const size_t es = DTypeSize(UsesOut(op) ? op.out.dtype : op.in.dtype);
  const size_t in_bytes = UsesIn(op) ? op.in.count * es : 0, out_bytes = op.out.count * es;
  // After the caller's work before the call; then the placements RunBroadcast and RunAllgather
  // make on the host, made on the device.
  Status run = q.After(op.ready.event);
  if (run.ok() && root && op.in.data != op.out.data) run = q.Copy(op.out.data, MemKind::kCuda, op.in.data, MemKind::kCuda, out_bytes);
  char* own = static_cast<char*>(op.out.data) + static_cast<size_t>(opts_.rank) * in_bytes;
  if (run.ok() && gather && own != op.in.data) run = q.Copy(own, MemKind::kCuda, op.in.data, MemKind::kCuda, in_bytes);
  // A reduce-scatter runs into a working copy the size of its input (as RunReduceScatter).
  Buffer run_out = op.out;
  if (run.ok() && scatter) {
    auto w = q.Scratch(kScratchWork, op.in.count * es);
    run = w.status();
    if (w.ok()) run_out = Buffer{*w, op.in.count, op.in.dtype, MemKind::kCuda};
  }
  if (!run.ok()) {
    run = ctx(run);
  } else {
    const Buffer run_in = bcast && !root ? run_out : op.in;  // a broadcast sends on what it received
    const size_t count = bcast || scatter ? op.out.count : op.in.count;
    run = RunSchedule(op, algo, count, run_in, run_out, seq, Compression::kNone, nullptr, &q);  // names the call
    if (run.ok() && scatter)
      run = ctx(q.Copy(op.out.data, MemKind::kCuda, static_cast<char*>(run_out.data) + static_cast<size_t>(opts_.rank) * out_bytes,
                       MemKind::kCuda, out_bytes));
  }
  // Whatever happened, nothing of the call runs on after it returns: the plain form synchronises.
  Status drained = q.Drain();
  if (!run.ok()) return run;
  return drained.ok() ? drained : ctx(drained);
}

}  // namespace hoop
