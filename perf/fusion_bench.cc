// See fusion_bench.h.
#include "perf/fusion_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "common/parse.h"
#include "perf/harness.h"
#include "perf/join.h"
#include "perf/sub_options.h"
#include "tensorfusion/runtime.h"

namespace hoop::perf {
namespace {

using Options = FusionBenchOptions;

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double, std::micro>(Clock::now() - t).count(); }

class FusionBench {
 public:
  FusionBench(Communicator& c, const Options& o, const fusion::FusionOptions& fo)
      : c_(c),
        o_(o),
        fo_(fo),
        count_(o.bytes / 4),
        tensors_(o.tensors, std::vector<float>(count_)),
        big_(count_ * o.tensors) {}

  // One repetition: the per-round times of each way on this rank, the negotiation figures.
  struct Rep {
    double fused = 0, single = 0, unfused = 0, negotiation = 0, cycle_wait = 0, cycles = 0, groups = 0;
    uint64_t coordinated = 0, wrong = 0;
  };

  StatusOr<Rep> RunRep() {
    Rep r;
    const CallOptions now{Algo::kAuto, true};
    Buffer big{big_.data(), big_.size(), DType::kF32};
    for (int i = 0; i < o_.warmup; ++i) HOOP_RETURN_IF_ERROR(c_.Allreduce(big, big, ReduceOp::kSum, now).Wait());
    HOOP_RETURN_IF_ERROR(c_.Barrier(now).Wait());
    auto t = Clock::now();
    for (int i = 0; i < o_.rounds; ++i) HOOP_RETURN_IF_ERROR(c_.Allreduce(big, big, ReduceOp::kSum, now).Wait());
    r.single = Since(t) / o_.rounds;

    const int unfused_rounds = std::max(2, o_.rounds / 4);
    HOOP_RETURN_IF_ERROR(Separate());  // warm-up
    HOOP_RETURN_IF_ERROR(c_.Barrier(now).Wait());
    t = Clock::now();
    for (int i = 0; i < unfused_rounds; ++i) HOOP_RETURN_IF_ERROR(Separate());
    r.unfused = Since(t) / unfused_rounds;

    HOOP_ASSIGN_OR_RETURN(auto rt, fusion::Runtime::Start(c_, fo_));
    for (int i = 0; i < o_.warmup; ++i) HOOP_RETURN_IF_ERROR(Fused(*rt));
    float one = 1;
    HOOP_RETURN_IF_ERROR(
        rt->Allreduce("barrier", {&one, 1, DType::kF32}, {&one, 1, DType::kF32}, ReduceOp::kSum).Wait());
    fusion::RuntimeStats before = rt->stats();
    t = Clock::now();
    for (int i = 0; i < o_.rounds; ++i) HOOP_RETURN_IF_ERROR(Fused(*rt));
    r.fused = Since(t) / o_.rounds;
    fusion::RuntimeStats after = rt->stats();
    // One more round on fresh data, checked.
    for (size_t k = 0; k < tensors_.size(); ++k)
      FillPattern(tensors_[k].data(), count_, c_.rank() + static_cast<int>(k % 7));
    HOOP_RETURN_IF_ERROR(Fused(*rt));
    for (size_t k = 0; k < tensors_.size(); ++k) r.wrong += Wrong(tensors_[k], static_cast<int>(k % 7));
    // The steady state's own cost: idle cycles, every name still cached (the exchange carries a
    // byte per cached name), no rank busy with anything else.
    fusion::RuntimeStats idle0 = rt->stats();
    std::this_thread::sleep_for(std::chrono::milliseconds(50) +
                                std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::duration<double, std::milli>(50 * fo_.cycle_time_ms)));
    fusion::RuntimeStats idle1 = rt->stats();
    HOOP_RETURN_IF_ERROR(rt->Shutdown());

    auto per_cycle = [](const fusion::RuntimeStats& a, const fusion::RuntimeStats& b) {
      return b.cycles > a.cycles ? (b.readiness_us - a.readiness_us) / static_cast<double>(b.cycles - a.cycles) : 0;
    };
    r.cycles = static_cast<double>(after.cycles - before.cycles) / o_.rounds;
    r.groups = static_cast<double>(after.groups - before.groups) / o_.rounds;
    r.coordinated =
        after.coordinated_cycles - before.coordinated_cycles + idle1.coordinated_cycles - idle0.coordinated_cycles;
    r.cycle_wait = per_cycle(before, after);
    r.negotiation = per_cycle(idle0, idle1);
    return r;
  }

  // The slowest rank's value of each time, the sum of wrong elements, the most coordinated cycles.
  StatusOr<Rep> Combine(Rep r) {
    const CallOptions now{Algo::kAuto, true};
    double times[] = {r.fused, r.single, r.unfused, r.negotiation, static_cast<double>(r.coordinated), r.cycle_wait};
    HOOP_RETURN_IF_ERROR(c_.Allreduce({times, 6, DType::kF64}, {times, 6, DType::kF64}, ReduceOp::kMax, now).Wait());
    int64_t wrong = static_cast<int64_t>(r.wrong);
    HOOP_RETURN_IF_ERROR(c_.Allreduce({&wrong, 1, DType::kI64}, {&wrong, 1, DType::kI64}, ReduceOp::kSum, now).Wait());
    r.fused = times[0], r.single = times[1], r.unfused = times[2], r.negotiation = times[3];
    r.coordinated = static_cast<uint64_t>(times[4]);
    r.cycle_wait = times[5];
    r.wrong = static_cast<uint64_t>(wrong);
    return r;
  }

 private:
  Status Separate() {
    const CallOptions now{Algo::kAuto, true};
    for (auto& t : tensors_)
      HOOP_RETURN_IF_ERROR(
          c_.Allreduce({t.data(), count_, DType::kF32}, {t.data(), count_, DType::kF32}, ReduceOp::kSum, now).Wait());
    return Status::Ok();
  }
  Status Fused(fusion::Runtime& rt) {
    handles_.clear();
    for (size_t k = 0; k < tensors_.size(); ++k) {
      Buffer b{tensors_[k].data(), count_, DType::kF32};
      handles_.push_back(rt.Allreduce(names_.size() > k ? names_[k] : Name(k), b, b, ReduceOp::kSum));
    }
    for (auto& h : handles_) HOOP_RETURN_IF_ERROR(h.Wait());
    return Status::Ok();
  }
  const std::string& Name(size_t k) {
    names_.push_back("grad/" + std::to_string(k));
    return names_[k];
  }
  uint64_t Wrong(const std::vector<float>& t, int shift) const {
    // FillPattern(rank + shift) summed over ranks is the pattern of a job shifted by `shift`:
    // compare with that sum computed here.
    std::vector<float> want(count_, 0), part(count_);
    for (int r = 0; r < c_.size(); ++r) {
      FillPattern(part.data(), count_, r + shift);
      for (size_t i = 0; i < count_; ++i) want[i] += part[i];
    }
    uint64_t bad = 0;
    for (size_t i = 0; i < count_; ++i) bad += t[i] != want[i];
    return bad;
  }

  Communicator& c_;
  const Options& o_;
  const fusion::FusionOptions& fo_;
  size_t count_;
  std::vector<std::vector<float>> tensors_;
  std::vector<float> big_;
  std::vector<std::string> names_;
  std::vector<fusion::Handle> handles_;
};

}  // namespace

int RunFusionBench(int argc, char** argv) {
  auto opts = ParseFusionOptions(argc, argv);
  if (!opts.ok()) {
    std::fprintf(stderr, "hoop-perf fusion: %s\n(run 'hoop-perf fusion --help' for usage)\n",
                 opts.status().message().c_str());
    return 2;
  }
  if (opts->help) {
    std::fputs(kFusionUsage, stdout);
    return 0;
  }
  PerfJob pj = JoinPerfJob("hoop-perf fusion", opts->transport);
  if (!pj.job) return pj.exit_code;
  Communicator& c = *pj.job->comm;
  const fusion::FusionOptions fo = fusion::FusionOptions::FromConfig(pj.cfg);
  const bool lead = c.rank() == 0;
  if (lead)
    std::printf(
        "# hoop-perf fusion: %d ranks over %s, %zu tensors x %s (f32 sum), cycle %g ms, fusion threshold %s\n"
        "# %4s %12s %12s %12s %10s %10s %14s %13s %8s %8s %6s\n",
        c.size(), c.transport_name().c_str(), opts->tensors, FormatBytes(opts->bytes).c_str(), fo.cycle_time_ms,
        FormatBytes(fo.fusion_threshold).c_str(), "rep", "fused_us", "single_us", "unfused_us", "fused/sgl",
        "unfsd/fsd", "negotiation_us", "cycle_wait_us", "cycles", "groups", "wrong");
  FusionBench bench(c, *opts, fo);
  std::vector<double> fused, single, unfused, negotiation, cycle_wait, f_over_s, u_over_f;
  uint64_t wrong = 0, coordinated = 0;
  double cycles = 0, groups = 0;
  for (int rep = 0; rep < opts->repeats; ++rep) {
    auto r = bench.RunRep();
    if (r.ok()) r = bench.Combine(*r);
    if (!r.ok()) {
      std::fprintf(stderr, "hoop-perf fusion: rank %d: %s\n", c.rank(), r.status().message().c_str());
      return 1;
    }
    fused.push_back(r->fused), single.push_back(r->single), unfused.push_back(r->unfused);
    negotiation.push_back(r->negotiation);
    cycle_wait.push_back(r->cycle_wait);
    f_over_s.push_back(r->fused / r->single);  // ratios within one repetition: drift cancels
    u_over_f.push_back(r->unfused / r->fused);
    wrong += r->wrong, coordinated += r->coordinated, cycles = r->cycles, groups = r->groups;
    if (lead)
      std::printf("  %4d %12.1f %12.1f %12.1f %10.2f %10.1f %14.2f %13.1f %8.1f %8.1f %6llu\n", rep + 1, r->fused,
                  r->single, r->unfused, r->fused / r->single, r->unfused / r->fused, r->negotiation, r->cycle_wait,
                  r->cycles, r->groups, static_cast<unsigned long long>(r->wrong));
  }
  const double f = Median(fused), s = Median(single), u = Median(unfused), n = Median(negotiation),
               w = Median(cycle_wait), fs = Median(f_over_s), uf = Median(u_over_f);
  if (lead) {
    std::printf(
        "# median: fused %.1f us, single %.1f us, unfused %.1f us; of the repetitions' ratios: fused/single %.2f,"
        " unfused/fused %.1f;\n"
        "# negotiation %.2f us per idle cycle (%.1f us per cycle while busy, waiting for the slowest rank);\n"
        "# %llu cycles needed the coordinator after warm-up; wrong %llu\n",
        f, s, u, fs, uf, n, w, static_cast<unsigned long long>(coordinated), static_cast<unsigned long long>(wrong));
    if (!opts->json.empty()) {
      std::FILE* out = std::fopen(opts->json.c_str(), "w");
      if (!out) {
        std::fprintf(stderr, "hoop-perf fusion: cannot write %s\n", opts->json.c_str());
        return 1;
      }
      std::fprintf(
          out,
          "{\"collective\": \"fusion\", \"ranks\": %d, \"transport\": \"%s\", \"tensors\": %zu, \"bytes\": %llu, "
          "\"rounds\": %d, \"repeats\": %d, \"cycle_time_ms\": %g, \"fusion_threshold\": %llu, "
          "\"fused_us\": %.3f, \"single_us\": %.3f, \"unfused_us\": %.3f, \"negotiation_us\": %.3f, \"cycle_wait_us\": "
          "%.3f, "
          "\"fused_over_single\": %.4f, \"unfused_over_fused\": %.4f, \"cycles_per_round\": %.2f, "
          "\"groups_per_round\": %.2f, \"coordinated_cycles\": %llu, \"wrong\": %llu}\n",
          c.size(), c.transport_name().c_str(), opts->tensors, static_cast<unsigned long long>(opts->bytes),
          opts->rounds, opts->repeats, fo.cycle_time_ms, static_cast<unsigned long long>(fo.fusion_threshold), f, s, u,
          n, w, fs, uf, cycles, groups, static_cast<unsigned long long>(coordinated),
          static_cast<unsigned long long>(wrong));
      std::fclose(out);
    }
  }
  return wrong ? 1 : 0;
}

}  // namespace hoop::perf
