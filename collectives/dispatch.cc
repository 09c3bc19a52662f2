// What every collective shares before it runs: call checks (before the call is queued, so bad
// input fails at once with a message naming rank, operation and the offending argument),
// algorithm resolution, and dispatch to the collective's own file.
#include <cstdio>
#include <cstring>

#include "collectives/communicator.h"
#include "common/device.h"
#include "common/extent.h"
#include "common/host_memory.h"

namespace hoop {

Status Communicator::CheckCall(const Op& op) const {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("rank " + std::to_string(opts_.rank) + ": " + CollKindName(op.kind) + ": " + why);
  };
  if (op.kind == CollKind::kBarrier) return Status::Ok();
  const size_t n = static_cast<size_t>(opts_.size);
  if (Rooted(op.kind) && (op.root < 0 || op.root >= opts_.size))
    return bad("root " + std::to_string(op.root) + " is not a rank (size " + std::to_string(opts_.size) + ")");
  const bool in_used = UsesIn(op), out_used = UsesOut(op);
  const bool reduces = op.kind == CollKind::kAllreduce || op.kind == CollKind::kReduceScatter ||
                       op.kind == CollKind::kReduce || op.kind == CollKind::kReduceScatterv;
  if (reduces) {
    if (std::string why = OpMismatch(op.in.dtype, op.op); !why.empty()) return bad(why);
  }
  if (in_used && out_used && op.in.dtype != op.out.dtype)
    return bad(std::string("input dtype ") + DTypeName(op.in.dtype) + " differs from output dtype " +
               DTypeName(op.out.dtype));
  // Device memory is staged through pinned host memory (device_staging.h): it needs a device.
  for (const Buffer* b : {&op.in, &op.out}) {
    if ((b == &op.out ? out_used : in_used) && b->kind == MemKind::kCuda && !opts_.device_access) {
      auto devices = CudaDeviceCount();
      if (!devices.ok())
        return Status(devices.status().code(), "rank " + std::to_string(opts_.rank) + ": " + CollKindName(op.kind) +
                                                   ": " + (b == &op.in ? "input" : "output") +
                                                   " is CUDA device memory, but: " + devices.status().message());
    }
  }
  if (op.stream && !opts_.stream_ops) {
    auto devices = CudaDeviceCount();
    if (!devices.ok())
      return Status(devices.status().code(), "rank " + std::to_string(opts_.rank) + ": " + CollKindName(op.kind) +
                                                 ": a CUDA stream was given, but: " + devices.status().message());
  }
  if (op.residual && QueryMemory(op.residual).kind == MemKind::kCuda)
    return Status(Code::kUnimplemented, "rank " + std::to_string(opts_.rank) + ": " + CollKindName(op.kind) +
                                            ": a residual (error feedback) in CUDA device memory is not supported yet");
  auto need_data = [&](const Buffer& b, const char* which) -> Status {
    if (b.count > 0 && b.data == nullptr)
      return bad(std::string(which) + " is null with count " + std::to_string(b.count));
    return Status::Ok();
  };
  // Sizes first: every product below must be known not to wrap before it is compared.
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
  // The per-rank count that is multiplied by the rank count somewhere.
  const bool block_in = op.kind == CollKind::kAllgather || op.kind == CollKind::kGather;
  const bool block_out = op.kind == CollKind::kReduceScatter || op.kind == CollKind::kScatter;
  if ((block_in && !CheckedMul(op.in.count, n)) || (block_out && !CheckedMul(op.out.count, n)))
    return bad("count " + std::to_string(block_in ? op.in.count : op.out.count) + " x " + std::to_string(n) +
               " ranks is 2^64 elements or more");
  switch (op.kind) {
    case CollKind::kAllreduce: {
      if (op.in.count != op.out.count)
        return bad("input count " + std::to_string(op.in.count) + " differs from output count " +
                   std::to_string(op.out.count));
      const Compression c = op.compression.value_or(Compression::kNone);
      if (c == Compression::kFp16 || c == Compression::kBf16) {
        if (!Compressible(op.out.dtype, op.op))
          return bad(std::string("compression ") + CompressionName(c) + " applies to f32 and f64 sum and avg, not " +
                     DTypeName(op.out.dtype) + " " + ReduceOpName(op.op));
        if (op.algo != Algo::kAuto && op.algo != Algo::kRing)
          return bad(std::string("compression runs the ring algorithm, not ") + AlgoName(op.algo));
      }
      if (op.residual && op.compression == Compression::kNone)
        return bad("a residual (error feedback) was given with compression none");
      if (op.residual && !Compressible(op.out.dtype, op.op))
        return bad(std::string("a residual (error feedback) applies to compressed f32/f64 sum and avg, not ") +
                   DTypeName(op.out.dtype) + " " + ReduceOpName(op.op));
      break;
    }
    case CollKind::kBroadcast:
    case CollKind::kReduce:
      if (op.root == opts_.rank && op.in.count != op.out.count)
        return bad("root's input count " + std::to_string(op.in.count) + " differs from its output count " +
                   std::to_string(op.out.count));
      break;
    case CollKind::kAllgather:
      if (op.out.count != op.in.count * n)
        return bad("output count " + std::to_string(op.out.count) +
                   " must be size x input count = " + std::to_string(op.in.count * n));
      break;
    case CollKind::kReduceScatter:
      if (op.in.count != op.out.count * n)
        return bad("input count " + std::to_string(op.in.count) +
                   " must be size x output count = " + std::to_string(op.out.count * n));
      break;
    case CollKind::kGather:
      if (op.root == opts_.rank && op.out.count != op.in.count * n)
        return bad("root's output count " + std::to_string(op.out.count) +
                   " must be size x input count = " + std::to_string(op.in.count * n));
      break;
    case CollKind::kScatter:
      if (op.root == opts_.rank && op.in.count != op.out.count * n)
        return bad("root's input count " + std::to_string(op.in.count) +
                   " must be size x output count = " + std::to_string(op.out.count * n));
      break;
    case CollKind::kAlltoall:
      if (op.in.count != op.out.count)
        return bad("input count " + std::to_string(op.in.count) + " differs from output count " +
                   std::to_string(op.out.count));
      if (op.in.count % n != 0)
        return bad("count " + std::to_string(op.in.count) + " is not a multiple of the " + std::to_string(n) +
                   " ranks");
      break;
    case CollKind::kAllgatherv:
    case CollKind::kReduceScatterv:
    case CollKind::kAlltoallv:
      if (std::string why = CheckBlocks(op); !why.empty()) return bad(why);
      break;
    case CollKind::kBarrier: break;
  }
  if (in_used) HOOP_RETURN_IF_ERROR(need_data(op.in, "input"));
  if (out_used) HOOP_RETURN_IF_ERROR(need_data(op.out, "output"));
  auto algo = Resolve(op);
  if (!algo.ok()) return bad(algo.status().message());
  return Status::Ok();
}

bool Communicator::HostReadable(const Buffer& b) const {
  if (b.kind != MemKind::kHost || b.count == 0) return true;
  return !CudaDeviceCount().ok() || readable_.Readable(b.data, b.count * DTypeSize(b.dtype));
}

std::string Communicator::Unreadable(const Buffer& b) {
  char at[32];
  std::snprintf(at, sizeof at, "%p", b.data);
  return std::string(" at ") + at +
         " is not memory this process can read: a CUDA device pointer from another process? (map it here with "
         "CUDA IPC first)";
}

Buffer Communicator::Scratch(size_t count, DType dtype) {
  const size_t bytes = count * DTypeSize(dtype);
  if (direct_) {
    auto p = direct_->Scratch(kScratchWork, bytes);
    if (p.ok()) return Buffer{*p, count, dtype, MemKind::kCuda};
    if (direct_error_.ok())
      direct_error_ = p.status().WithContext("rank " + std::to_string(opts_.rank) + ": a device working copy");
    return Buffer{nullptr, 0, dtype, MemKind::kCuda};  // the schedule refuses to run (RunSchedule)
  }
  // Offset from the allocation's start: large allocations (this one and the caller's) begin at
  // the same offset in a page, and copying between buffers at equal page offsets ran 4x slower
  // (4K aliasing: in-place alltoall of 256 KiB took 113 us instead of 28).
  constexpr size_t kSkew = 320;
  if (scratch_.size() < bytes + kSkew) scratch_.resize(bytes + kSkew);
  return Buffer{scratch_.data() + kSkew, count, dtype, MemKind::kHost};
}

Status Communicator::Place(void* dst, const void* src, size_t bytes) {
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

Work Communicator::Post(CollKind kind, const Buffer& in, const Buffer& out, ReduceOp op, int root,
                        const CallOptions& o) {
  Op x;
  x.kind = kind;
  x.in = in;
  x.out = out;
  x.op = op;
  x.root = root;
  x.algo = o.algo;
  x.stream = o.stream;
  return Submit(x, o.blocking);
}

size_t Communicator::MaxCallBytes() const {
  // Chunk numbers travel in 24 bits of a message's tag (executor.cc): more chunks than that in
  // one step would reuse tags. The bound is the same on every rank (the chunk size is).
  const size_t chunk = ChunkBytes();
  return std::min<size_t>(static_cast<size_t>(PTRDIFF_MAX), chunk << 24);
}

bool Communicator::UsesIn(const Op& op) const {
  if (op.kind == CollKind::kBarrier) return false;
  return !((op.kind == CollKind::kBroadcast || op.kind == CollKind::kScatter) && op.root != opts_.rank);
}

bool Communicator::UsesOut(const Op& op) const {
  if (op.kind == CollKind::kBarrier) return false;
  return !((op.kind == CollKind::kReduce || op.kind == CollKind::kGather) && op.root != opts_.rank);
}

StatusOr<Algo> Communicator::Resolve(const Op& op) const {
  // What every rank passes alike, so that all choose the same algorithm.
  const size_t bytes = DescCount(op) * DTypeSize(UsesOut(op) ? op.out.dtype : op.in.dtype);
  AlgoChoice c = ChooseAlgo(op.kind, bytes, opts_.size, op.algo, opts_.algo, even_hosts_);
  if (!c.error.empty()) return InvalidArgument(c.error);
  return c.algo;
}

Status Communicator::RunOp(const Op& op, uint32_t seq) {
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
    if (DeviceQueue* q = DirectQueue(op)) return RunDirect(op, seq, *q);
    return RunStaged(op, seq);
  }
  return RunCollective(op, seq);
}

Status Communicator::RunCollective(const Op& op, uint32_t seq) {
  switch (op.kind) {
    case CollKind::kAllreduce: return RunAllreduce(op, seq);
    case CollKind::kBroadcast: return RunBroadcast(op, seq);
    case CollKind::kAllgather: return RunAllgather(op, seq);
    case CollKind::kReduceScatter: return RunReduceScatter(op, seq);
    case CollKind::kBarrier: return RunBarrier(op, seq);
    case CollKind::kReduce: return RunReduce(op, seq);
    case CollKind::kGather: return RunGather(op, seq);
    case CollKind::kScatter: return RunScatter(op, seq);
    case CollKind::kAlltoall: return RunAlltoall(op, seq);
    case CollKind::kAllgatherv: return RunAllgatherv(op, seq);
    case CollKind::kReduceScatterv: return RunReduceScatterv(op, seq);
    case CollKind::kAlltoallv: return RunAlltoallv(op, seq);
  }
  return Internal("unknown collective");
}

}  // namespace hoop
