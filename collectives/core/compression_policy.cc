// Which allreduces travel compressed (kernels/wire.h), and HOOP_COMPRESSION=auto's choice.
//
// An explicit fp16 or bf16 (per call, or HOOP_COMPRESSION) compresses every f32/f64 sum or avg
// allreduce; other calls travel as they are (a per-call request on them is refused earlier, in
// CheckCall). auto compresses only where halving the bytes pays for the codec's work:
//  - the job spans hosts (one host means shared memory or loopback, never a slow link),
//  - the message is at least kAutoMinBytes (below that, latency, not bytes, sets the time),
//  - the ring measured slower than kAutoSlowLinkGBps.
// The measurement runs once, before the first allreduce that passes the first two tests: two
// uncompressed ring allreduces of kProbeBytes, the second timed, and the slowest rank's time
// agreed by a max-allreduce, so that every rank decides alike (they must: the ranks' message
// formats must match). auto picks fp16: per-chunk scaling removes its range problem, and it
// keeps three more bits than bf16.
#include <chrono>
#include <vector>

#include "collectives/core/comm_core.h"
#include "common/logging.h"

namespace hoop {
namespace {
constexpr size_t kAutoMinBytes = 1u << 20;
constexpr double kAutoSlowLinkGBps = 1.5;
constexpr size_t kProbeBytes = 4u << 20;
}  // namespace

StatusOr<Compression> CommCore::WireFor(const Op& op) {
  const Compression want = op.compression.value_or(opts_.compression);
  if (want == Compression::kNone || !Compressible(op.out.dtype, op.op) || opts_.size == 1) return Compression::kNone;
  if (want != Compression::kAuto) return want;
  if (op.out.count * DTypeSize(op.out.dtype) < kAutoMinBytes || opts_.local_size >= opts_.size)
    return Compression::kNone;
  if (!link_gbps_) {
    HOOP_ASSIGN_OR_RETURN(double gbps, ProbeLinkGBps());
    link_gbps_ = gbps;
    HOOP_LOG(kInfo, "HOOP_COMPRESSION=auto: the ring measured "
                        << gbps << " GB/s bus bandwidth: allreduces of f32/f64 "
                        << (gbps < kAutoSlowLinkGBps ? "from 1 MiB up travel in fp16" : "travel uncompressed"));
  }
  return *link_gbps_ < kAutoSlowLinkGBps ? Compression::kFp16 : Compression::kNone;
}

StatusOr<double> CommCore::ProbeLinkGBps() {
  std::vector<float> data(kProbeBytes / sizeof(float), 1.0f);
  Op probe;
  probe.kind = CollKind::kAllreduce;
  probe.in = probe.out = Buffer{data.data(), data.size(), DType::kF32, MemKind::kHost};
  double seconds = 0;
  for (int i = 0; i < 2; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    HOOP_RETURN_IF_ERROR(RunSchedule(probe, Algo::kRing, data.size(), probe.in, probe.out, seq_++)
                             .WithContext("measuring the link for HOOP_COMPRESSION=auto"));
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  double slowest = 0;
  Op agree;
  agree.kind = CollKind::kAllreduce;
  agree.op = ReduceOp::kMax;
  agree.in = Buffer{&seconds, 1, DType::kF64, MemKind::kHost};
  agree.out = Buffer{&slowest, 1, DType::kF64, MemKind::kHost};
  HOOP_ASSIGN_OR_RETURN(Algo algo, Resolve(agree));
  HOOP_RETURN_IF_ERROR(RunSchedule(agree, algo, 1, agree.in, agree.out, seq_++));
  const double n = opts_.size;
  return slowest > 0 ? 2 * (n - 1) / n * static_cast<double>(kProbeBytes) / slowest / 1e9 : 1e9;
}

}  // namespace hoop
