// The kernels of every instruction set this CPU runs (generic, AVX2+F16C, AVX-512), and their
// non-temporal variants, give the same bits as the generic ones for every dtype x op, with and without the average's
// divisor, on
// random bits (so NaN, inf, subnormals and signed zeros all occur), every length up to 70 (the
// vector loops' tails) and 1000, at every alignment, in place and not. NaN results need only be
// NaN on both sides: which operand's payload survives is the compiler's choice.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "collectives/kernels/reduce.h"

using namespace hoop;

namespace {
bool IsNan(DType dt, const char* p) { return IsFloat(dt) && std::isnan(LoadAsDouble(dt, p, 0)); }
}  // namespace

TEST_CASE("every instruction set's kernels give the generic kernels' bits", "[kernels]") {
  std::mt19937_64 rng(7);
  int isas = 0;
  for (KernelIsa isa : {KernelIsa::kAvx2, KernelIsa::kAvx512}) {
    if (!LookupReduceIsa(isa, DType::kF32, ReduceOp::kSum)) {
      WARN("instruction set " << KernelIsaName(isa) << " not run here: not built or not on this CPU");
      continue;
    }
    ++isas;
    for (DType dt : kAllDTypes) {
      const size_t es = DTypeSize(dt);
      for (ReduceOp op : kAllReduceOps) {
        for (int divisor : {1, 3}) {
          if (divisor > 1 && op != ReduceOp::kAvg) continue;
          if (!OpApplies(dt, op)) continue;
          ReduceFn want_fn = LookupReduceIsa(KernelIsa::kGeneric, dt, op), got_fn = LookupReduceIsa(isa, dt, op);
          REQUIRE(want_fn);
          REQUIRE(got_fn);
          std::vector<size_t> lengths;
          for (size_t n = 0; n <= 70; ++n) lengths.push_back(n);
          lengths.push_back(1000);
          for (size_t n : lengths) {
            size_t off = n % 8;  // misaligned starts
            std::vector<char> a((n + 8) * es), b((n + 8) * es), want((n + 8) * es), got((n + 8) * es);
            for (auto* v : {&a, &b})
              for (auto& c : *v) c = static_cast<char>(rng());
            char* pa = a.data() + off * es;
            char* pb = b.data() + off * es;
            want_fn(want.data() + off * es, pa, pb, n, divisor);
            got_fn(got.data() + off * es, pa, pb, n, divisor);
            std::vector<char> inplace(pa, pa + n * es);
            got_fn(inplace.data(), inplace.data(), pb, n, divisor);  // dst aliases a
            // The non-temporal variant (f32/f16/bf16 sum and avg), where this set has one.
            ReduceFn stream_fn = LookupStreamIsa(isa, dt, op);
            std::vector<char> streamed = stream_fn ? std::vector<char>(want.size(), 0x5a) : want;
            if (stream_fn) stream_fn(streamed.data() + off * es, pa, pb, n, divisor);
            size_t bad = 0;
            for (size_t i = 0; i < n; ++i) {
              const char* w = want.data() + (off + i) * es;
              for (const char* g : {static_cast<const char*>(got.data()) + (off + i) * es,
                                    static_cast<const char*>(inplace.data()) + i * es,
                                    static_cast<const char*>(streamed.data()) + (off + i) * es})
                if (std::memcmp(w, g, es) != 0 && !(IsNan(dt, w) && IsNan(dt, g))) ++bad;
            }
            INFO(KernelIsaName(isa) << " " << DTypeName(dt) << " " << ReduceOpName(op) << " divisor " << divisor
                                    << " n " << n);
            CHECK(bad == 0);
          }
        }
      }
    }
  }
  if (isas == 0) WARN("only the generic kernels run on this CPU: nothing to compare");
}

TEST_CASE("the host kernels are the widest instruction set's", "[kernels]") {
  KernelIsa best = BestKernelIsa();
  CHECK(LookupReduce(DType::kF16, ReduceOp::kSum, MemKind::kHost) ==
        LookupReduceIsa(best, DType::kF16, ReduceOp::kSum));
  CHECK(LookupReduce(DType::kF32, ReduceOp::kSum, MemKind::kCuda) == nullptr);
  WARN("reduction kernels here: " << KernelIsaName(best));
}
