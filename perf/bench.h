// hoop-perf's measurement of one size of one collective on one dtype and op: buffers laid out in
// place or out of place, warm-up, then R timed repetitions of N iterations of -m calls each,
// every repetition between barriers, its per-call time combined across ranks as -a says; then
// (-c 1) one more call on fresh data checked element by element against the reference. With
// --rotate K the calls go round K such layouts, each filled alike; the first is checked.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "collectives/api/communicator.h"
#include "perf/perf_options.h"

namespace hoop::perf {

struct Row {
  DType dtype = DType::kF32;
  ReduceOp op = ReduceOp::kSum;  // meaningful where the collective reduces
  uint64_t bytes = 0, count = 0;
  bool in_place = false;
  Algo algo = Algo::kAuto;
  int iters = 0, repeats = 0;
  double time_us = 0, min_us = 0, max_us = 0;  // median, fastest and slowest repetition
  double algbw = 0, busbw = 0;                 // GB/s, from the median
  int64_t wrong = -1;                          // -1: not checked
  double err_ratio = -1;                       // compressed and checked: the worst |error| / bound, else -1
};

double BusFactor(CollKind k, int n);

class Bench {
 public:
  Bench(Communicator& c, const PerfOptions& o, DType dtype, ReduceOp op);
  // iters > 0: that many timed iterations (out of place and in place of one size share them);
  // 0: -n, else scaled by the size and the first call's time.
  StatusOr<Row> RunSize(uint64_t bytes, uint64_t seed, bool in_place, int iters = 0);
  // The count of elements a call of `bytes` moves (0 when below one element per rank).
  size_t CountFor(uint64_t bytes) const;
  bool Compressed() const;  // --compression fp16, bf16 or auto on a call compression serves

 private:
  // Device memory, freed with its layout.
  struct DeviceMem {
    void* p = nullptr;
    DeviceMem() = default;
    DeviceMem(DeviceMem&& o) noexcept : p(o.p) { o.p = nullptr; }
    DeviceMem& operator=(DeviceMem&& o) noexcept {
      std::swap(p, o.p);
      return *this;
    }
    ~DeviceMem();
  };
  struct Layout {
    size_t in_count = 0, out_count = 0;
    std::vector<char> a, b;  // out of place: in = a, out = b; in place: both inside a
    char *in = nullptr, *out = nullptr;
    // --device cuda: a and b mirrored on the device; din and dout at in's and out's offsets.
    DeviceMem da, db;
    char *din = nullptr, *dout = nullptr;
  };
  Layout MakeLayout(uint64_t bytes, bool in_place) const;
  void Fill(Layout& l, uint64_t seed) const;
  // --device cuda: allocates the device mirrors; copies the host buffers up, and the output down.
  Status Mirror(Layout& l) const;
  Status Upload(Layout& l) const;
  Status Download(Layout& l) const;
  Work Launch(Layout& l, bool blocking = true);
  StatusOr<int64_t> Check(Layout& l, uint64_t seed, double* err_ratio);
  void FillFor(void* buf, size_t count, uint64_t seed, int rank) const;
  // Per call, combined across ranks (-a); call i on layout i mod their count.
  StatusOr<double> TimedCalls(std::vector<Layout>& ls, int iters);

  Communicator& c_;
  const PerfOptions& o_;
  DType dtype_;
  ReduceOp op_;
  int n_;
  size_t esize_;
};

}  // namespace hoop::perf
