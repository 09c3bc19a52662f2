// hoop-perf's measurement of one size of one collective: buffers laid out in place or out of
// place, warm-up, then R timed repetitions of N calls each, every repetition between barriers and
// reported as the slowest rank's mean; optionally one more call on fresh data checked element by
// element against the reference.
#pragma once

#include <cstdint>
#include <vector>

#include "collectives/communicator.h"
#include "perf/perf_options.h"

namespace hoop::perf {

struct Row {
  uint64_t bytes = 0, count = 0;
  bool in_place = false;
  Algo algo = Algo::kAuto;
  int iters = 0, repeats = 0;
  double time_us = 0, min_us = 0, max_us = 0;  // median, fastest and slowest repetition
  double algbw = 0, busbw = 0;                 // GB/s, from the median
  int64_t wrong = -1;                          // -1: not checked
  double err_ratio = -1;  // compressed and checked: the worst |error| / bound, else -1
};

double BusFactor(CollKind k, int n);

class Bench {
 public:
  Bench(Communicator& c, const PerfOptions& o);
  StatusOr<Row> RunSize(uint64_t bytes, uint64_t seed, bool in_place);

 private:
  struct Layout {
    size_t in_count = 0, out_count = 0;
    std::vector<char> a, b;  // out of place: in = a, out = b; in place: both inside a
    char *in = nullptr, *out = nullptr;
  };
  Layout MakeLayout(uint64_t bytes, bool in_place) const;
  void Fill(Layout& l, uint64_t seed) const;
  Work Launch(Layout& l);
  StatusOr<int64_t> Check(Layout& l, uint64_t seed, double* err_ratio);
  void FillFor(void* buf, size_t count, uint64_t seed, int rank) const;
  bool Compressed() const;  // -z fp16, bf16 or auto on a call compression serves
  StatusOr<double> SlowestMean(Layout& l, int iters);

  Communicator& c_;
  const PerfOptions& o_;
  int n_;
  size_t esize_;
};

}  // namespace hoop::perf
