// What every collective shares before it runs: call checks (before the call is queued, so bad
// input fails at once with a message naming rank, operation and the offending argument),
// algorithm resolution, and dispatch to the collective's own file.
#include <cstdio>
#include <cstring>

#include "collectives/core/comm_core.h"
#include "common/device.h"
#include "common/extent.h"
#include "common/host_memory.h"

namespace hoop {

Status CommCore::CheckCall(const Op& op) const {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("rank " + std::to_string(opts_.rank) + ": " + CollKindName(op.kind) + ": " + why);
  };
  if (op.kind == CollKind::kBarrier) return Status::Ok();
  const CollRow& row = Row(op.kind);
  if (row.rooted && (op.root < 0 || op.root >= opts_.size))
    return bad("root " + std::to_string(op.root) + " is not a rank (size " + std::to_string(opts_.size) + ")");
  const bool in_used = UsesIn(op), out_used = UsesOut(op);
  if (row.reduces && !OpApplies(op.in.dtype, op.op)) return bad(OpMismatch(op.in.dtype, op.op));
  if (in_used && out_used && op.in.dtype != op.out.dtype)
    return bad(std::string("input dtype ") + DTypeName(op.in.dtype) + " differs from output dtype " +
               DTypeName(op.out.dtype));
  HOOP_RETURN_IF_ERROR(CheckBuffers(op));
  if (std::string why = row.check(op, opts_.rank, opts_.size); !why.empty()) return bad(why);
  for (const Buffer* b : {&op.in, &op.out}) {
    if ((b == &op.in ? in_used : out_used) && b->count > 0 && b->data == nullptr)
      return bad(std::string(b == &op.in ? "input" : "output") + " is null with count " + std::to_string(b->count));
  }
  auto algo = Resolve(op);
  if (!algo.ok()) return bad(algo.status().message());
  return Status::Ok();
}

Status CommCore::CheckBuffers(const Op& op) const {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("rank " + std::to_string(opts_.rank) + ": " + CollKindName(op.kind) + ": " + why);
  };
  auto unusable = [&](const Status& s, const std::string& what) {
    return Status(s.code(), "rank " + std::to_string(opts_.rank) + ": " + CollKindName(op.kind) + ": " + what +
                                ", but: " + s.message());
  };
  const bool in_used = UsesIn(op), out_used = UsesOut(op);
  // Device memory is staged through pinned host memory (device_staging.h): it needs a device.
  for (const Buffer* b : {&op.in, &op.out}) {
    if ((b == &op.out ? out_used : in_used) && b->kind == MemKind::kCuda && !opts_.device_access) {
      auto devices = CudaDeviceCount();
      if (!devices.ok())
        return unusable(devices.status(), std::string(b == &op.in ? "input" : "output") + " is CUDA device memory");
    }
  }
  if (op.stream && !opts_.stream_ops) {
    auto devices = CudaDeviceCount();
    if (!devices.ok()) return unusable(devices.status(), "a CUDA stream was given");
  }
  if (op.residual && QueryMemory(op.residual).kind == MemKind::kCuda)
    return Status(Code::kUnimplemented, "rank " + std::to_string(opts_.rank) + ": " + CollKindName(op.kind) +
                                            ": a residual (error feedback) in CUDA device memory is not supported yet");
  // Sizes first: every product the shape checks make must be known not to wrap.
  const size_t max_bytes = MaxCallBytes();
  for (const Buffer* b : {&op.in, &op.out}) {
    if (!(b == &op.in ? in_used : out_used)) continue;
    const char* which = b == &op.in ? "input" : "output";
    if (std::string why = ExtentProblem(b->data, b->count, b->dtype); !why.empty())
      return bad(std::string(which) + " " + why);
    if (b->count * DTypeSize(b->dtype) > max_bytes)
      return bad(std::string(which) + " count " + std::to_string(b->count) + " x " + DTypeName(b->dtype) +
                 " is more than the " + std::to_string(max_bytes) +
                 " bytes one call can address (2^24 chunks of HOOP_CHUNK_BYTES)");
  }
  // "Host" memory that is another process's device memory: refused, not crashed on.
  for (const Buffer* b : {&op.in, &op.out})
    if ((b == &op.in ? in_used : out_used) && !HostReadable(*b))
      return bad(std::string(b == &op.in ? "input" : "output") + Unreadable(*b));
  return Status::Ok();
}

bool CommCore::HostReadable(const Buffer& b) const {
  if (b.kind != MemKind::kHost || b.count == 0) return true;
  return !CudaDeviceCount().ok() || readable_.Readable(b.data, b.count * DTypeSize(b.dtype));
}

std::string CommCore::Unreadable(const Buffer& b) {
  char at[32];
  std::snprintf(at, sizeof at, "%p", b.data);
  return std::string(" at ") + at +
         " is not memory this process can read: a CUDA device pointer from another process? (map it here with "
         "CUDA IPC first)";
}

Buffer CommCore::Scratch(size_t count, DType dtype) {
  const size_t bytes = count * DTypeSize(dtype);
  if (direct_) {
    auto p = direct_->Scratch(kScratchWork, bytes);
    if (p.ok()) return Buffer{*p, count, dtype, MemKind::kCuda, direct_->device()};
    if (direct_error_.ok())
      direct_error_ = p.status().WithContext("rank " + std::to_string(opts_.rank) + ": a device working copy");
    return Buffer{nullptr, 0, dtype, MemKind::kCuda, direct_->device()};  // the schedule refuses to run (RunSchedule)
  }
  // Offset from the allocation's start: large allocations (this one and the caller's) begin at
  // the same offset in a page, and copying between buffers at equal page offsets ran 4x slower
  // (4K aliasing: in-place alltoall of 256 KiB took 113 us instead of 28).
  constexpr size_t kSkew = 320;
  if (scratch_.size() < bytes + kSkew) scratch_.resize(bytes + kSkew);
  return Buffer{scratch_.data() + kSkew, count, dtype, MemKind::kHost};
}

Status CommCore::Place(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return Status::Ok();
  if (direct_ && !direct_error_.ok()) return direct_error_;  // no working copy to place into
  if (!direct_) {
    std::memmove(dst, src, bytes);
    return Status::Ok();
  }
  const auto *d = static_cast<const char*>(dst), *s = static_cast<const char*>(src);
  if (d < s + bytes && s < d + bytes) {  // overlapping: CUDA's copies may not, so by way of a bounce
    HOOP_ASSIGN_OR_RETURN(char* b, direct_->Scratch(kScratchPlace, bytes));
    HOOP_RETURN_IF_ERROR(direct_->Copy(b, MemKind::kCuda, src, MemKind::kCuda, bytes));
    src = b;
  }
  return direct_->Copy(dst, MemKind::kCuda, src, MemKind::kCuda, bytes);
}

size_t CommCore::MaxCallBytes() const {
  // Chunk numbers travel in 24 bits of a message's tag (executor.cc): more chunks than that in
  // one step would reuse tags. The bound is the same on every rank (the chunk size is).
  const size_t chunk = ChunkBytes();
  return std::min<size_t>(static_cast<size_t>(PTRDIFF_MAX), chunk << 24);
}

StatusOr<Algo> CommCore::Resolve(const Op& op) const {
  // What every rank passes alike, so that all choose the same algorithm.
  const size_t bytes = DescCount(op) * DTypeSize(UsesOut(op) ? op.out.dtype : op.in.dtype);
  AlgoChoice c = ChooseAlgo(op.kind, bytes, opts_.size, op.algo, opts_.algo, even_hosts_, op.deterministic);
  if (!c.error.empty()) return InvalidArgument(c.error);
  return c.algo;
}

Status CommCore::RunOp(const Op& op, uint32_t seq) {
  // On a stream: the input is ready when the stream's work before the call is (its device
  // buffers were staged by copies queued on it, so none are left here).
  if (op.ticket.seq != 0) {
    const auto ctx = [&](const Status& s) {
      return s.WithContext("rank " + std::to_string(opts_.rank) + ": " + CollKindName(op.kind) + ": on a CUDA stream");
    };
    if (!op.stage_error.ok()) return ctx(op.stage_error);
    if (Status s = WaitStreamInput(op.ticket); !s.ok()) return ctx(s);
  }
  if (OnDevice(op)) {
    RecordDeferred();
    return RunOnDevice(op, seq);  // device_route.cc
  }
  return RunCollective(op, seq);
}

// A call's view of its communicator while its row's run runs (coll_table.h).
class CommCore::CallRun final : public CallContext {
 public:
  CallRun(CommCore& c, const Op& op, uint32_t seq) : c_(c), op_(op), seq_(seq) {}
  int rank() const override { return c_.opts_.rank; }
  int size() const override { return c_.opts_.size; }
  StatusOr<Algo> Resolve() const override { return c_.Resolve(op_); }
  StatusOr<Compression> Wire() override { return c_.WireFor(op_); }
  Status Place(void* dst, const void* src, size_t bytes) override { return c_.Place(dst, src, bytes); }
  Buffer Scratch(size_t count, DType dtype) override { return c_.Scratch(count, dtype); }
  Status RunSchedule(Algo algo, size_t count, const Buffer& in, const Buffer& out, Compression wire) override {
    return c_.RunSchedule(op_, algo, count, in, out, seq_, wire);
  }

 private:
  CommCore& c_;
  const Op& op_;
  const uint32_t seq_;
};

Status CommCore::RunCollective(const Op& op, uint32_t seq) {
  CallRun run(*this, op, seq);
  return Row(op.kind).run(run, op);
}

}  // namespace hoop
