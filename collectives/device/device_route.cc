// CommCore::RunOnDevice: the one place a call's device buffers find their way to its run
// (RunOp comes here whenever the call uses device memory; Submit only marked the caller's CUDA
// work before it, ready_events.h). Each rank chooses alone, from its buffers (their ordinals,
// found once where the call entered: Buffer::device), its transport and the collective's table
// row; no choice changes a message, so ranks that choose differently still meet.
//
//   direct     the transport moves device memory itself (CUDA IPC over shm) and the buffers sit
//              on one device: the collective's own code runs with its copies, working memory
//              and reductions on the device queue (device_direct.cc). Not a compressed
//              allreduce: the codec runs on host copies. Not a call of fewer bytes than
//              HOOP_CUDA_IPC_MIN_BYTES (counted from the count every rank passes alike, so all
//              choose alike): each chunk that goes by IPC costs a hand-over between the ranks'
//              processes on the GPU, hundreds of microseconds where they share one, while a few
//              kilobytes cross to pinned host memory and back in microseconds; such a call stages.
//   pipelined  the row says its collective stages piece by piece (allreduce, broadcast,
//              allgather, reduce-scatter, each with its placement: Staging in coll_table.h),
//              across ranks, its device buffers on one device: pinned host pieces copied beside
//              the wire (RunPipelined, pipelined_staging.h).
//   whole      everything else, and every fold (a deterministic reduction, or "fold" named: it
//              runs on the host): each device buffer copied whole to pinned host memory, the
//              call run there, the output copied back (RunStaged, device_staging.cc).
#include "collectives/core/comm_core.h"

namespace hoop {

bool CommCore::OnDevice(const Op& op) const {
  return (UsesIn(op) && op.in.kind == MemKind::kCuda) || (UsesOut(op) && op.out.kind == MemKind::kCuda);
}

bool CommCore::BelowIpcMin(const Op& op) const {
  if (opts_.cuda_ipc_min_bytes == 0) return false;
  const DType dtype = UsesOut(op) ? op.out.dtype : op.in.dtype;
  return DescCount(op) * DTypeSize(dtype) < opts_.cuda_ipc_min_bytes;
}

Status CommCore::RunOnDevice(const Op& op, uint32_t seq) {
  // A fold (a deterministic reduction, or the algorithm named) runs on the host, where its bits
  // are the host kernels' (it has no device kernel): its device buffers go whole.
  if (Row(op.kind).reduces) {
    const StatusOr<Algo> algo = Resolve(op);
    const AlgoRow* row = algo.ok() ? FindAlgo(op.kind, *algo) : nullptr;
    if (op.deterministic || (row && row->canonical)) return RunStaged(op, seq);
  }
  DeviceQueue* q = BelowIpcMin(op) ? nullptr : DirectQueue(op);
  if (q != nullptr) {
    Compression wire = Compression::kNone;
    if (op.kind == CollKind::kAllreduce) {
      HOOP_ASSIGN_OR_RETURN(wire, WireFor(op));
    }
    if (wire == Compression::kNone) return RunDirect(op, seq, *q);
  }
  const Staging staging = Row(op.kind).staging;
  if (staging != Staging::kWhole && opts_.size > 1 && DescCount(op) > 0) {
    const bool in_dev = UsesIn(op) && op.in.kind == MemKind::kCuda;
    const bool out_dev = UsesOut(op) && op.out.kind == MemKind::kCuda;
    const int din = in_dev ? op.in.device : -1, dout = out_dev ? op.out.device : -1;
    const bool all_device = (!UsesIn(op) || in_dev) && (!UsesOut(op) || out_dev);
    // An allreduce also with one side on the host; the others with every buffer on the device.
    if ((staging == Staging::kPipelined || all_device) && (din < 0 || dout < 0 || din == dout))
      return RunPipelined(op, seq, din >= 0 ? din : dout);
  }
  return RunStaged(op, seq);
}

}  // namespace hoop
