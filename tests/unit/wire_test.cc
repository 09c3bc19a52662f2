// The wire codec kernels (collectives/kernels/wire.h) on their own: every instruction set gives
// the generic kernels' bits; the per-chunk scale keeps every finite value finite in fp16 and
// rounds each to within u of itself; the bound's factor is what the header says.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "collectives/kernels/wire.h"

using namespace hoop;

namespace {
// Random bits of T, so NaN, inf and subnormals all occur, mixed with ordinary values.
template <class T>
std::vector<T> RandomValues(std::mt19937_64& rng, size_t n) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) {
    if (rng() % 4 == 0) {
      uint64_t bits = rng();
      std::memcpy(&v[i], &bits, sizeof(T));
    } else {
      v[i] = static_cast<T>(
          std::ldexp(static_cast<double>(rng() % 2000000) / 1e6 - 1.0, static_cast<int>(rng() % 60) - 30));
    }
  }
  return v;
}
template <class T>
bool SameValues(const std::vector<T>& a, const std::vector<T>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

template <class T>
void CompareIsa(const WireKernels& want, const WireKernels& got, std::mt19937_64& rng, size_t n) {
  auto x = RandomValues<T>(rng, n), add = RandomValues<T>(rng, n);
  CHECK((want.absmax(x.data(), nullptr, n) == got.absmax(x.data(), nullptr, n)));
  CHECK((want.absmax(x.data(), add.data(), n) == got.absmax(x.data(), add.data(), n)));
  const double scale = std::ldexp(1.0, 7), inv = std::ldexp(1.0, -7);
  for (int mask = 0; mask < 8; ++mask) {
    std::vector<uint16_t> w1(n), w2(n);
    std::vector<T> r1 = add, r2 = add, o1(n), o2(n);
    const bool use_add = mask & 4, use_res = mask & 2, use_round = mask & 1;
    want.encode(w1.data(), use_round ? o1.data() : nullptr, x.data(), use_add ? add.data() : nullptr,
                use_res ? r1.data() : nullptr, n, scale, inv, 3.0);
    got.encode(w2.data(), use_round ? o2.data() : nullptr, x.data(), use_add ? add.data() : nullptr,
               use_res ? r2.data() : nullptr, n, scale, inv, 3.0);
    INFO("encode mask " << mask << ", n " << n);
    CHECK(w1 == w2);
    CHECK(SameValues(r1, r2));
    CHECK(SameValues(o1, o2));
  }
  std::vector<uint16_t> w(n);
  want.encode(w.data(), nullptr, x.data(), nullptr, nullptr, n, scale, inv, 1.0);
  for (int divisor : {0, 3}) {
    std::vector<T> d1(n), d2(n);
    want.decode_add(d1.data(), x.data(), add.data(), w.data(), n, inv, divisor);
    got.decode_add(d2.data(), x.data(), add.data(), w.data(), n, inv, divisor);
    CHECK(SameValues(d1, d2));
    want.decode_add(d1.data(), x.data(), nullptr, w.data(), n, inv, divisor);
    got.decode_add(d2.data(), x.data(), nullptr, w.data(), n, inv, divisor);
    CHECK(SameValues(d1, d2));
  }
  std::vector<T> d1(n), d2(n);
  want.decode(d1.data(), w.data(), n, inv);
  got.decode(d2.data(), w.data(), n, inv);
  CHECK(SameValues(d1, d2));
}
}  // namespace

TEST_CASE("every instruction set's wire kernels give the generic kernels' bits", "[wire]") {
  std::mt19937_64 rng(11);
  for (KernelIsa isa : {KernelIsa::kAvx2, KernelIsa::kAvx512}) {
    for (Compression c : {Compression::kFp16, Compression::kBf16}) {
      for (DType dt : {DType::kF32, DType::kF64}) {
        const WireKernels* got = LookupWireIsa(isa, dt, c);
        const WireKernels* want = LookupWireIsa(KernelIsa::kGeneric, dt, c);
        REQUIRE(want);
        if (!got) {
          WARN(KernelIsaName(isa) << " not run here: not built or not on this CPU");
          continue;
        }
        for (size_t n :
             {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{33}, size_t{70}, size_t{1000}}) {
          if (dt == DType::kF32)
            CompareIsa<float>(*want, *got, rng, n);
          else
            CompareIsa<double>(*want, *got, rng, n);
        }
      }
    }
  }
}

TEST_CASE("the per-chunk scale keeps fp16 finite and each value within u", "[wire]") {
  std::mt19937_64 rng(5);
  for (Compression c : {Compression::kFp16, Compression::kBf16}) {
    const WireKernels* k = LookupWire(DType::kF32, c);
    REQUIRE(k);
    const double u = CompressionUnitRoundoff(c);
    for (int top : {-100, -20, 0, 15, 16, 40, 126}) {  // the chunk's largest magnitude is about 2^top
      const size_t n = 4096;
      std::vector<float> x(n);
      for (size_t i = 0; i < n; ++i)
        x[i] = static_cast<float>((i % 2 ? -1 : 1) * std::ldexp(1.0 + static_cast<double>(rng() % 1000) / 1000,
                                                                top - static_cast<int>(rng() % 12)));
      x[7] = std::ldexp(1.99f, top);  // rounds up to the next power of two at worst
      const double absmax = k->absmax(x.data(), nullptr, n);
      const int e = WireScaleExponent(absmax, DType::kF32);
      INFO(CompressionName(c) << ", largest about 2^" << top << ", scale 2^" << e);
      CHECK(std::ldexp(absmax, e) >= 16384);
      CHECK(std::ldexp(absmax, e) < 32768);
      std::vector<uint16_t> w(n);
      std::vector<float> back(n);
      k->encode(w.data(), back.data(), x.data(), nullptr, nullptr, n, std::ldexp(1.0, e), std::ldexp(1.0, -e), 1);
      size_t far = 0;
      for (size_t i = 0; i < n; ++i) {
        REQUIRE(std::isfinite(back[i]));
        if (std::fabs(back[i] - x[i]) > u * std::fabs(x[i])) ++far;  // all are normal at this spread
      }
      CHECK(far == 0);
    }
  }
  // inf and NaN travel as themselves and do not set the scale.
  const WireKernels* k = LookupWire(DType::kF32, Compression::kFp16);
  std::vector<float> x = {1.0f, INFINITY, -INFINITY, NAN, 1e6f};
  CHECK(k->absmax(x.data(), nullptr, x.size()) == 1e6);
  const int e = WireScaleExponent(1e6, DType::kF32);
  std::vector<uint16_t> w(x.size());
  std::vector<float> back(x.size());
  k->encode(w.data(), back.data(), x.data(), nullptr, nullptr, x.size(), std::ldexp(1.0, e), std::ldexp(1.0, -e), 1);
  CHECK(back[1] == INFINITY);
  CHECK(back[2] == -INFINITY);
  CHECK(std::isnan(back[3]));
  CHECK(std::fabs(back[4] - 1e6f) <= 1e6 * std::ldexp(1.0, -11));
}

TEST_CASE("the error bound's factor and the scale's limits", "[wire]") {
  CHECK(CompressionErrorFactor(Compression::kFp16, 1) == 0);
  CHECK(CompressionErrorFactor(Compression::kNone, 8) == 0);
  const double u = std::ldexp(1.0, -11) + std::ldexp(1.0, -23);
  CHECK(CompressionErrorFactor(Compression::kFp16, 4) == Approx(4 * u / (1 - 4 * u)));
  CHECK(CompressionErrorFactor(Compression::kBf16, 8) > CompressionErrorFactor(Compression::kBf16, 4));
  CHECK(WireScaleExponent(0, DType::kF32) == 0);
  CHECK(WireScaleExponent(INFINITY, DType::kF32) == 0);
  CHECK(WireScaleExponent(1e-44, DType::kF32) == 126);  // clamped: 2^126 is a normal f32
  CHECK(WireScaleExponent(1e300, DType::kF64) == 15 - 997);
  CHECK(WireScaleExponent(1e-320, DType::kF64) == 1000);
  CHECK(ParseCompression("bf16") == Compression::kBf16);
  CHECK_FALSE(ParseCompression("fp8"));
  CHECK(Compressible(DType::kF64, ReduceOp::kAvg));
  CHECK_FALSE(Compressible(DType::kF32, ReduceOp::kMax));
  CHECK_FALSE(Compressible(DType::kBF16, ReduceOp::kSum));
}
