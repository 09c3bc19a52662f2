// CommCore::RunStaged (device buffers staged whole) and RunPipelined (in pinned pieces beside the
// wire), the two staged ways of RunOnDevice (device_route.cc); PinnedStaging (device_staging.h);
// CommCore::EnterStream (stream_staging.h).
#include "collectives/device/device_staging.h"

#include <algorithm>
#include <chrono>

#include "collectives/core/comm_core.h"
#include "common/device.h"

namespace hoop {

PinnedStaging::~PinnedStaging() {
  for (char* p : buf_) CudaFree(p, MemKind::kCudaPinned);
  for (char* p : retired_) CudaFree(p, MemKind::kCudaPinned);
}

StatusOr<char*> PinnedStaging::Get(int which, size_t bytes) {
  const size_t w = static_cast<size_t>(which);
  if (bytes_[w] < bytes || buf_[w] == nullptr) {
    // At least doubled, so the retired buffers together stay smaller than the current one.
    const size_t want = std::max(bytes, 2 * bytes_[w]);
    HOOP_ASSIGN_OR_RETURN(void* p, CudaAllocPinned(want));
    if (buf_[w] != nullptr) retired_.push_back(buf_[w]);
    buf_[w] = static_cast<char*>(p);
    bytes_[w] = want;
  }
  return buf_[w];
}

namespace {
// Where a device buffer's bytes go in host staging: the input lies inside the output (in place)
// when both are device memory, and one staging copy of the output then serves both.
struct StagePlan {
  bool in_dev, out_dev, inside;
  size_t in_bytes, out_bytes, in_offset;
};
}  // namespace

static StagePlan PlanStaging(const Buffer& in, bool uses_in, const Buffer& out, bool uses_out) {
  StagePlan p{};
  p.out_dev = uses_out && out.kind == MemKind::kCuda;
  p.in_dev = uses_in && in.kind == MemKind::kCuda;
  p.in_bytes = in.count * DTypeSize(in.dtype);
  p.out_bytes = out.count * DTypeSize(out.dtype);
  const auto* out_lo = static_cast<const char*>(out.data);
  const auto* in_lo = static_cast<const char*>(in.data);
  p.inside = p.in_dev && p.out_dev && in_lo >= out_lo && in_lo + p.in_bytes <= out_lo + p.out_bytes;
  p.in_offset = p.inside ? static_cast<size_t>(in_lo - out_lo) : 0;
  return p;
}

Status CommCore::RunStaged(const Op& op, uint32_t seq) {
  const auto ctx = [&](const Status& s) {
    return s.WithContext("rank " + std::to_string(opts_.rank) + ": " + CollKindName(op.kind) +
                         ": staging device memory");
  };
  const StagePlan plan = PlanStaging(op.in, UsesIn(op), op.out, UsesOut(op));
  // Whole buffers, on the staging streams of the device of the input (else the output): after the
  // caller's work before the call (op.ready), waited for before the run and after it.
  const int device = plan.in_dev ? op.in.device : op.out.device;
  if (!stage_copies_ || stage_copies_->device() != device) stage_copies_ = std::make_unique<CudaStageCopies>(device);
  Op host = op;
  uint32_t ins = 0;
  Status c = stage_copies_->Prepare(op.ready.event);
  if (c.ok() && plan.out_dev) {
    auto p = device_staging_.Get(1, plan.out_bytes);
    c = p.status();
    if (p.ok()) {
      host.out.data = *p;
      host.out.kind = MemKind::kCudaPinned;
    }
    if (p.ok() && plan.inside) {  // the output's current contents are (part of) the input
      c = stage_copies_->QueueIn(*p, op.out.data, plan.out_bytes, true);
      ++ins;
      host.in.data = *p + plan.in_offset;
      host.in.kind = MemKind::kCudaPinned;
    }
  }
  if (c.ok() && plan.in_dev && !plan.inside) {
    auto p = device_staging_.Get(0, plan.in_bytes);
    c = p.status();
    if (p.ok()) {
      c = stage_copies_->QueueIn(*p, op.in.data, plan.in_bytes, true);
      ++ins;
      host.in.data = *p;
      host.in.kind = MemKind::kCudaPinned;
    }
  }
  if (c.ok()) c = stage_copies_->WaitIn(ins, Deadline::After(opts_.timeout));
  Status run = c.ok() ? RunOp(host, seq) : ctx(c);  // RunOp's errors name the call
  if (run.ok() && plan.out_dev) run = ctx(stage_copies_->QueueOut(op.out.data, host.out.data, plan.out_bytes));
  // Every copy waited for, whatever happened: the pinned buffers are reused by the next call.
  Status copies = stage_copies_->Finish();
  if (!run.ok()) return run;
  return copies.ok() ? copies : ctx(copies);
}

// Where a staged call's time goes: what does not hide behind the wire shows here (HOOP_DEBUG).
static void LogPipelined(int rank, CollKind kind, size_t bytes, bool in_place, const PipelinedStaging& memory,
                         std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point ran) {
  const auto us = [](auto d) { return std::chrono::duration<double, std::micro>(d).count(); };
  const PipelinedStaging::Times& t = memory.times();
  HOOP_LOG(kDebug, "rank " << rank << ": " << CollKindName(kind) << " of " << bytes << " B staged piece by piece"
                           << (in_place ? ", in place" : "") << ": " << memory.copies_in() << " copies in ("
                           << memory.map().in.size() << " ranges) queued in " << t.queue_in_us << " us, waited "
                           << t.wait_in_us << " us for them; " << memory.copies_out() << " copies back queued in "
                           << t.queue_out_us << " us; the run " << us(ran - start) << " us, then "
                           << us(std::chrono::steady_clock::now() - ran) << " us for the last copies");
}

Status CommCore::RunPipelined(const Op& op, uint32_t seq, int device) {
  const auto ctx = [&](const Status& s) {
    return s.WithContext("rank " + std::to_string(opts_.rank) + ": " + CollKindName(op.kind) +
                         ": staging device memory");
  };
  HOOP_ASSIGN_OR_RETURN(Algo algo, Resolve(op));
  // The row's placements: the root's copy (broadcast), the own block (allgather), the own block
  // back from a working copy (reduce-scatter), or none (allreduce, whose wire may be compressed).
  const Staging staging = Row(op.kind).staging;
  Compression wire = Compression::kNone;
  if (staging == Staging::kPipelined) {
    HOOP_ASSIGN_OR_RETURN(wire, WireFor(op));
    if (wire != Compression::kNone) algo = Algo::kRing;  // as RunAllreduce
  }
  const bool bcast = staging == Staging::kPipelinedRootCopy, gather = staging == Staging::kPipelinedOwnBlock;
  const bool scatter = staging == Staging::kPipelinedFromScratch;
  const bool root = bcast && op.root == opts_.rank;
  const size_t es = DTypeSize(UsesOut(op) ? op.out.dtype : op.in.dtype);
  const size_t in_bytes = UsesIn(op) ? op.in.count * es : 0, out_bytes = op.out.count * es;
  // Each device side gets a pinned buffer of its own; an allreduce in place on the device runs in
  // place on one (PipelinedStaging then holds each write until the copy in under it landed). A
  // reduce-scatter runs into a host working copy (as RunReduceScatter) whose own block goes to
  // the device at the end.
  Op host = op;
  char *host_in = nullptr, *host_out = nullptr;
  const bool in_place = staging == Staging::kPipelined && op.in.kind == MemKind::kCuda &&
                        op.out.kind == MemKind::kCuda && op.in.data == op.out.data;
  if (UsesIn(op) && op.in.kind == MemKind::kCuda && !in_place) {
    auto p = device_staging_.Get(0, in_bytes);
    if (!p.ok()) return ctx(p.status());
    host_in = *p;
    host.in = Buffer{host_in, op.in.count, op.in.dtype, MemKind::kCudaPinned};
  }
  Buffer run_out;
  if (scatter) {
    run_out = Scratch(op.in.count, op.in.dtype);
  } else if (op.out.kind == MemKind::kCuda) {
    auto p = device_staging_.Get(1, out_bytes);
    if (!p.ok()) return ctx(p.status());
    host_out = *p;
    host.out = Buffer{host_out, op.out.count, op.out.dtype, MemKind::kCudaPinned};
    run_out = host.out;
    if (in_place) {
      host_in = host_out;
      host.in = Buffer{host_in, op.in.count, op.in.dtype, MemKind::kCudaPinned};
    }
  } else {
    run_out = op.out;
  }
  // A broadcast's other ranks have no input: the schedule sends from what they received.
  const Buffer run_in = bcast && !root ? run_out : host.in;
  const size_t count = bcast || scatter ? op.out.count : op.in.count;
  char* own = static_cast<char*>(op.out.data) + static_cast<size_t>(opts_.rank) * in_bytes;  // allgather
  if (!stage_copies_ || stage_copies_->device() != device) stage_copies_ = std::make_unique<CudaStageCopies>(device);
  Status run = stage_copies_->Prepare(op.ready.event);
  // The callers' placements in the output (RunBroadcast's, RunAllgather's), made on the device.
  if (run.ok() && root && op.in.data != op.out.data) run = stage_copies_->Place(op.out.data, op.in.data, out_bytes);
  if (run.ok() && gather && own != op.in.data) run = stage_copies_->Place(own, op.in.data, in_bytes);
  if (!run.ok()) {
    (void)stage_copies_->Finish();  // every copy waited for: the pinned buffers are reused by the next call
    return ctx(run);
  }
  PipelinedStaging memory(*stage_copies_, host_in ? static_cast<const char*>(op.in.data) : nullptr, host_in,
                          host_out ? static_cast<char*>(op.out.data) : nullptr, host_out,
                          Deadline::After(opts_.timeout), opts_.stage_bytes, opts_.stage_ahead_bytes);
  const auto start = std::chrono::steady_clock::now();
  run = RunSchedule(host, algo, count, run_in, run_out, seq, wire, &memory);  // its errors name the call
  if (run.ok()) run = ctx(memory.Flush());
  if (run.ok() && scatter)
    run = ctx(stage_copies_->QueueOut(
        op.out.data, static_cast<char*>(run_out.data) + static_cast<size_t>(opts_.rank) * out_bytes, out_bytes));
  const auto ran = std::chrono::steady_clock::now();
  Status copies = stage_copies_->Finish();  // whatever happened, as above
  if (LogEnabled(LogLevel::kDebug)) LogPipelined(opts_.rank, op.kind, count * es, in_place, memory, start, ran);
  if (!run.ok()) return run;
  return copies.ok() ? copies : ctx(copies);
}

Status CommCore::WaitStreamInput(const StreamTicket& t) {
  const Deadline deadline = Deadline::After(opts_.timeout);
  while (!StreamOrder::InputReady(t)) {
    if (Interrupted()) return RevokedAt("rank " + std::to_string(opts_.rank) + ": waiting for the CUDA stream");
    if (deadline.Expired())
      return DeadlineExceeded("the CUDA stream's work queued before the call did not finish in time (" +
                              opts_.timeout_name + ")");
    if (mailbox_->Busy()) {
      // A receive this stream waits for (queued before the call) completes only if driven.
      mailbox_->Progress(Deadline::At(Deadline::Clock::now() + std::chrono::microseconds(200)).Earlier(deadline));
      if (!mailbox_->fatal().ok()) return mailbox_->fatal();
    } else {
      (void)stream_order_.WaitInput(t, Deadline::After(std::chrono::milliseconds(1)).Earlier(deadline));
    }
  }
  return Status::Ok();
}

StatusOr<StreamTicket> CommCore::EnterStream(Op& op) {
  if (op.p2p) return EnterStreamP2p(op);
  void* stream = *op.stream;
  if (!OnDevice(op)) return stream_order_.Enter(stream);
  const StagePlan plan = PlanStaging(op.in, UsesIn(op), op.out, UsesOut(op));
  const size_t in_need = plan.in_dev && !plan.inside ? plan.in_bytes : 0;
  // A staged side gets at least a byte: an empty buffer still needs an address.
  HOOP_ASSIGN_OR_RETURN(StreamStaging::Slot * slot,
                        stream_staging_.Take(plan.in_dev && !plan.inside ? std::max<size_t>(in_need, 1) : 0,
                                             plan.out_dev ? std::max<size_t>(plan.out_bytes, 1) : 0));
  const Buffer dev_out = op.out;
  // Before the hold: the device input into the slot.
  Status c;
  if (plan.out_dev && plan.inside)
    c = CopyMem(slot->out, MemKind::kCudaPinned, op.out.data, MemKind::kCuda, plan.out_bytes, stream);
  if (c.ok() && in_need > 0) c = CopyMem(slot->in, MemKind::kCudaPinned, op.in.data, MemKind::kCuda, in_need, stream);
  auto t = c.ok() ? stream_order_.Enter(stream) : StatusOr<StreamTicket>(c);
  // After it: the host output back to the device.
  if (t.ok() && plan.out_dev)
    c = CopyMem(dev_out.data, MemKind::kCuda, slot->out, MemKind::kCudaPinned, plan.out_bytes, stream);
  stream_staging_.Give(slot, stream);
  if (!t.ok()) return t.status();
  // A copy back that could not be queued: the call still goes to the worker, which releases its
  // hold in order, and fails there.
  if (!c.ok()) op.stage_error = c.WithContext("queueing the copy of the output back to the device");
  if (plan.out_dev) {
    op.out.data = slot->out;
    op.out.kind = MemKind::kCudaPinned;
  }
  if (plan.inside) {
    op.in.data = slot->out + plan.in_offset;
    op.in.kind = MemKind::kCudaPinned;
  } else if (plan.in_dev) {
    op.in.data = slot->in;
    op.in.kind = MemKind::kCudaPinned;
  }
  return t;
}

}  // namespace hoop
