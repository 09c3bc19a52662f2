// See recorder_bench.h.
#include "perf/recorder_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "collectives/api/bootstrap.h"
#include "perf/harness.h"
#include "perf/join.h"
#include "perf/sub_options.h"

namespace hoop::perf {
namespace {

using Options = RecorderBenchOptions;
using Clock = std::chrono::steady_clock;

// One block: `calls` blocking allreduces on `c`, the slowest rank's mean per call, in microseconds.
StatusOr<double> Block(Communicator& c, std::vector<float>& in, std::vector<float>& out, int calls) {
  const Buffer ib{in.data(), in.size(), DType::kF32}, ob{out.data(), out.size(), DType::kF32};
  CallOptions blocking;
  blocking.blocking = true;  // on the calling thread, done when it returns (hoop_allreduce's way)
  HOOP_RETURN_IF_ERROR(c.Barrier().Wait());
  const auto t0 = Clock::now();
  for (int i = 0; i < calls; ++i) HOOP_RETURN_IF_ERROR(c.Allreduce(ib, ob, ReduceOp::kSum, blocking).Wait());
  double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / calls, slowest = 0;
  HOOP_RETURN_IF_ERROR(c.Allreduce({&us, 1, DType::kF64}, {&slowest, 1, DType::kF64}, ReduceOp::kMax).Wait());
  return slowest;
}

struct Result {
  std::vector<double> on, off, ratio;
  uint64_t recorded = 0;
  bool right = true;
};

StatusOr<Result> Measure(Communicator& on, Communicator& off, const Options& o) {
  std::vector<float> in(o.bytes / 4), out(in.size());
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(on.rank() + 1) + static_cast<float>(i % 7);
  HOOP_RETURN_IF_ERROR(Block(on, in, out, std::max(1, o.calls / 10)).status());  // warm-up
  HOOP_RETURN_IF_ERROR(Block(off, in, out, std::max(1, o.calls / 10)).status());
  Result r;
  for (int b = 0; b < o.blocks; ++b) {
    double t_on = 0, t_off = 0;
    for (int half = 0; half < 2; ++half) {
      const bool recording = (half == 0) == (b % 2 == 0);
      HOOP_ASSIGN_OR_RETURN(double t, Block(recording ? on : off, in, out, o.calls));
      (recording ? t_on : t_off) = t;
    }
    r.on.push_back(t_on);
    r.off.push_back(t_off);
    r.ratio.push_back(t_on / t_off);
  }
  const int n = on.size();
  for (size_t i = 0; i < out.size(); ++i)  // sum over ranks r of (r + 1 + i % 7)
    r.right = r.right && out[i] == static_cast<float>(n * (n + 1) / 2 + n * static_cast<int>(i % 7));
  return r;
}

}  // namespace

int RunRecorderBench(int argc, char** argv) {
  auto opts = ParseRecorderOptions(argc, argv);
  if (!opts.ok()) {
    std::fprintf(stderr, "hoop-perf recorder: %s\n(run 'hoop-perf recorder --help' for usage)\n",
                 opts.status().message().c_str());
    return 2;
  }
  if (opts->help) {
    std::fputs(kRecorderUsage, stdout);
    return 0;
  }
  PerfJob pj = JoinPerfJob("hoop-perf recorder", opts->transport);
  if (!pj.job) return pj.exit_code;
  // Two more communicators of the job, each with connections of its own, as the first.
  Config cfg_on = pj.cfg, cfg_off = pj.cfg;
  cfg_on.trace_ops = opts->ops;
  cfg_off.trace_ops = 0;
  auto job_on = JoinJob(cfg_on);
  auto job_off = job_on.ok() ? JoinJob(cfg_off) : StatusOr<std::unique_ptr<Job>>(job_on.status());
  Communicator& c = *pj.job->comm;
  const bool lead = c.rank() == 0;
  if (!job_off.ok()) {
    std::fprintf(stderr, "hoop-perf recorder: rank %d: %s\n", c.rank(), job_off.status().message().c_str());
    return 1;
  }
  Communicator &on = *(*job_on)->comm, &off = *(*job_off)->comm;
  auto r = Measure(on, off, *opts);
  if (!r.ok()) {
    std::fprintf(stderr, "hoop-perf recorder: rank %d: %s\n", c.rank(), r.status().message().c_str());
    return 1;
  }
  const double m_on = Median(r->on), m_off = Median(r->off), ratio = Median(r->ratio);
  if (lead) {
    std::printf("# hoop-perf recorder: %d ranks over %s, %llu-byte allreduce (f32 sum), %d blocks of %d calls\n",
                c.size(), c.transport_name().c_str(), static_cast<unsigned long long>(opts->bytes), opts->blocks,
                opts->calls);
    if (opts->ops == 0) std::printf("# --ops 0: neither communicator records (an A/A check of the method)\n");
    std::printf("# %6s %12s %12s %10s\n", "block", "recording_us", "off_us", "ratio");
    for (size_t i = 0; i < r->on.size(); ++i)
      std::printf("  %6zu %12.3f %12.3f %10.3f\n", i + 1, r->on[i], r->off[i], r->ratio[i]);
    std::printf("# medians: recording %.3f us, off %.3f us; ratio of pairs %.3f (%+.1f%%, %+.1f ns per call)\n", m_on,
                m_off, ratio, (ratio - 1) * 100, (ratio - 1) * m_off * 1000);
    std::printf("# %s\n", r->right ? "results checked: right" : "WRONG RESULTS");
    if (!opts->json.empty()) {
      std::FILE* out = std::fopen(opts->json.c_str(), "w");
      if (!out) {
        std::fprintf(stderr, "hoop-perf recorder: cannot write %s\n", opts->json.c_str());
        return 1;
      }
      std::fprintf(out,
                   "{\"bench\": \"recorder\", \"ranks\": %d, \"transport\": \"%s\", \"bytes\": %llu, \"calls\": %d, "
                   "\"blocks\": %d, \"ops\": %zu, \"recording_us\": %.6g, \"off_us\": %.6g, \"ratio\": %.6g, "
                   "\"right\": %s}\n",
                   c.size(), c.transport_name().c_str(), static_cast<unsigned long long>(opts->bytes), opts->calls,
                   opts->blocks, opts->ops, m_on, m_off, ratio, r->right ? "true" : "false");
      std::fclose(out);
    }
  }
  return r->right ? 0 : 1;
}

}  // namespace hoop::perf
