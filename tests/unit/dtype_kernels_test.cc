#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "collectives/kernels/reduce.h"
#include "collectives/testing/reference.h"
#include "common/dtype.h"

using namespace hoop;

TEST_CASE("f16 and bf16 round-trip every value through f32", "[dtype]") {
  for (uint32_t h = 0; h < 65536; ++h) {
    uint16_t v = static_cast<uint16_t>(h);
    float f = HalfToFloat(v);
    if (std::isnan(f)) {
      CHECK(std::isnan(HalfToFloat(FloatToHalf(f))));
      continue;
    }
    CHECK(FloatToHalf(f) == v);
    float g = BF16ToFloat(v);
    if (!std::isnan(g)) CHECK(FloatToBF16(g) == v);
  }
}

TEST_CASE("f16 and bf16 conversion rounds to nearest even", "[dtype]") {
  CHECK(HalfToFloat(FloatToHalf(1.0f + 1.0f / 2048)) == 1.0f);                // tie -> even
  CHECK(HalfToFloat(FloatToHalf(1.0f + 3.0f / 2048)) == 1.0f + 2.0f / 1024);  // tie -> even (up)
  CHECK(HalfToFloat(FloatToHalf(65520.0f)) == INFINITY);
  CHECK(HalfToFloat(FloatToHalf(65519.0f)) == 65504.0f);
  CHECK(HalfToFloat(FloatToHalf(1e-8f)) == 0.0f);
  CHECK(HalfToFloat(FloatToHalf(6e-8f)) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(BF16ToFloat(FloatToBF16(1.0f + 1.0f / 256)) == 1.0f);
  CHECK(BF16ToFloat(FloatToBF16(1.0f + 3.0f / 256)) == 1.0f + 2.0f / 128);
}

TEST_CASE("reduced-precision sums are computed in f32 and rounded once", "[kernels]") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-100, 100);
  for (DType dt : {DType::kF16, DType::kBF16}) {
    auto load = dt == DType::kF16 ? HalfToFloat : BF16ToFloat;
    auto store = dt == DType::kF16 ? FloatToHalf : FloatToBF16;
    std::vector<uint16_t> a(1001), b(1001), d(1001);
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = store(dist(rng));
      b[i] = store(dist(rng));
    }
    LookupReduce(dt, ReduceOp::kSum, MemKind::kHost)(d.data(), a.data(), b.data(), a.size(), 0);
    for (size_t i = 0; i < a.size(); ++i) CHECK(d[i] == store(load(a[i]) + load(b[i])));
    LookupReduce(dt, ReduceOp::kAvg, MemKind::kHost)(d.data(), a.data(), b.data(), a.size(), 3);
    for (size_t i = 0; i < a.size(); ++i) CHECK(d[i] == store((load(a[i]) + load(b[i])) / 3.0f));
  }
}

TEST_CASE("every dtype x op kernel agrees with plain arithmetic", "[kernels]") {
  for (DType dt : kAllDTypes) {
    for (ReduceOp op : kAllReduceOps) {
      const size_t n = 257, es = DTypeSize(dt);
      std::vector<char> a(n * es), b(n * es), d(n * es), want(n * es);
      FillInput(dt, op, a.data(), n, 1);
      FillInput(dt, op, b.data(), n, 2);
      ReduceFn fn = LookupReduce(dt, op, MemKind::kHost);
      INFO(DTypeName(dt) << " " << ReduceOpName(op));
      if (!OpApplies(dt, op)) {  // bitwise ops on floats; bool sum, avg, prod
        CHECK(fn == nullptr);
        CHECK_FALSE(OpMismatch(dt, op).empty());
        continue;
      }
      REQUIRE(fn != nullptr);
      fn(d.data(), a.data(), b.data(), n, op == ReduceOp::kAvg ? 2 : 0);
      for (size_t i = 0; i < n; ++i) {
        auto get = [&](const std::vector<char>& v) { return LoadAsDouble(dt, v.data(), i); };
        const bool integer = !IsFloat(dt);
        double x = get(a), y = get(b), r = get(d), e = 0;
        switch (op) {
          case ReduceOp::kSum: e = x + y; break;
          case ReduceOp::kProd: e = x * y; break;
          case ReduceOp::kMin: e = std::min(x, y); break;
          case ReduceOp::kMax: e = std::max(x, y); break;
          case ReduceOp::kAvg: e = integer ? std::trunc((x + y) / 2) : (x + y) / 2; break;
          case ReduceOp::kBand: e = static_cast<double>(static_cast<int64_t>(x) & static_cast<int64_t>(y)); break;
          case ReduceOp::kBor: e = static_cast<double>(static_cast<int64_t>(x) | static_cast<int64_t>(y)); break;
          case ReduceOp::kBxor: e = static_cast<double>(static_cast<int64_t>(x) ^ static_cast<int64_t>(y)); break;
        }
        {  // rounded once to the dtype, as the kernel does (integers wrap, as StoreFromDouble's casts)
          std::vector<char> one(es);
          StoreFromDouble(dt, one.data(), 0, e);
          e = LoadAsDouble(dt, one.data(), 0);
        }
        INFO(DTypeName(dt) << " " << ReduceOpName(op) << " i=" << i << " x=" << x << " y=" << y);
        CHECK(r == e);
      }
    }
  }
}

TEST_CASE("integer sums and products wrap instead of overflowing", "[kernels]") {
  int32_t a = INT32_MAX, b = 1, d = 0;
  LookupReduce(DType::kI32, ReduceOp::kSum, MemKind::kHost)(&d, &a, &b, 1, 0);
  CHECK(d == INT32_MIN);
  uint8_t x = 200, y = 2, z = 0;
  LookupReduce(DType::kU8, ReduceOp::kProd, MemKind::kHost)(&z, &x, &y, 1, 0);
  CHECK(z == 144);
  int8_t p = 100, q = 100, r = 0;
  LookupReduce(DType::kI8, ReduceOp::kSum, MemKind::kHost)(&r, &p, &q, 1, 0);
  CHECK(r == -56);
  uint16_t u = 65535, v = 65535, w = 0;  // promoted to int, 65535^2 would overflow it
  LookupReduce(DType::kU16, ReduceOp::kProd, MemKind::kHost)(&w, &u, &v, 1, 0);
  CHECK(w == 1);
  int16_t i = 32767, j = 1, k = 0;
  LookupReduce(DType::kI16, ReduceOp::kSum, MemKind::kHost)(&k, &i, &j, 1, 0);
  CHECK(k == -32768);
  uint64_t big = UINT64_MAX, two = 2, sum = 0;
  LookupReduce(DType::kU64, ReduceOp::kSum, MemKind::kHost)(&sum, &big, &two, 1, 0);
  CHECK(sum == 1);
  uint32_t m = 0x80000000u, one = 1, mx = 0;  // unsigned order, not signed
  LookupReduce(DType::kU32, ReduceOp::kMax, MemKind::kHost)(&mx, &m, &one, 1, 0);
  CHECK(mx == 0x80000000u);
  CHECK(LookupReduce(DType::kF32, ReduceOp::kSum, MemKind::kCuda) == nullptr);
}

// The reference's data (reference.h): exact small integers whose whole range turns up, so that
// reductions are exact and every value an op can meet is met; and another seed, other data.
TEST_CASE("FillInput draws every value of its range for each dtype and op", "[reference]") {
  auto value = [](DType dt, const std::vector<char>& v, size_t i) { return LoadAsDouble(dt, v.data(), i); };
  auto as_dtype = [](DType dt, double x) {  // x rounded to dt, as the fill converts it
    char one[8];
    StoreFromDouble(dt, one, 0, x);
    return LoadAsDouble(dt, one, 0);
  };
  for (DType dt : kAllDTypes) {
    for (ReduceOp op : kAllReduceOps) {
      if (!OpApplies(dt, op)) continue;
      const bool bitwise = op == ReduceOp::kBand || op == ReduceOp::kBor || op == ReduceOp::kBxor;
      double lo = -8, hi = 8;
      const bool is_unsigned = DTypeRow(dt).cls == DTypeClass::kUnsigned;
      const bool byte = dt == DType::kU8 || dt == DType::kI8, short16 = dt == DType::kU16 || dt == DType::kI16;
      if (dt == DType::kBool)
        lo = 0, hi = 1;
      else if (bitwise)  // every bit pattern of the narrow types, 2^20 values of the wide ones
        lo = is_unsigned ? 0
             : byte      ? -128
             : short16   ? -32768
                         : -(1 << 19),
        hi = lo + (byte      ? 255
                   : short16 ? 65535
                             : (1 << 20) - 1);
      else if (op == ReduceOp::kProd)
        lo = is_unsigned ? 1 : -2, hi = 2;
      else if (op == ReduceOp::kMin || op == ReduceOp::kMax)
        lo = is_unsigned ? 0 : dt == DType::kI8 ? -128 : -500, hi = is_unsigned || dt == DType::kI8 ? lo + 255 : 500;
      else if (is_unsigned)
        lo = 0, hi = 16;
      else if (dt == DType::kF8E4M3)  // small enough that sums of 8 ranks stay exact
        lo = -2, hi = 2;
      else if (dt == DType::kF8E5M2)
        lo = -1, hi = 1;
      if (IsFloat(dt)) lo = as_dtype(dt, lo), hi = as_dtype(dt, hi);
      // Odd counts, so the tail is drawn too; 2^20 values need a few million draws to show both ends.
      const bool wide = bitwise && !byte && !short16 && dt != DType::kBool;
      const size_t count = wide ? 4000003 : bitwise && short16 ? 1000003 : 20011;
      std::vector<char> a(count * DTypeSize(dt)), b(a.size());
      FillInput(dt, op, a.data(), count, 7);
      FillInput(dt, op, b.data(), count, 8);
      INFO(DTypeName(dt) << " " << ReduceOpName(op));
      double min = 1e300, max = -1e300;
      bool integral = true, zero_prod = false;
      for (size_t i = 0; i < count; ++i) {
        const double x = value(dt, a, i);
        min = std::min(min, x);
        max = std::max(max, x);
        integral = integral && x == std::trunc(x);
        zero_prod = zero_prod || (op == ReduceOp::kProd && x == 0);
      }
      CHECK(integral);
      CHECK_FALSE(zero_prod);
      CHECK(min == lo);
      CHECK(max == hi);
      CHECK(a != b);
    }
  }
}

TEST_CASE("FillInputSlice gives exactly the elements of the whole fill, wherever the slice lies", "[reference]") {
  for (DType dt : kAllDTypes) {
    const size_t es = DTypeSize(dt);
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax, ReduceOp::kBxor}) {
      if (!OpApplies(dt, op)) continue;
      // Every slice of the small totals (slices starting and ending inside a word of four draws,
      // and in the tail drawn a word per element), and slices of a large odd total.
      for (size_t total : {0, 1, 3, 4, 5, 7, 8, 9, 13}) {
        std::vector<unsigned char> whole(total * es + 1, 0);
        FillInput(dt, op, whole.data(), total, 99);
        for (size_t first = 0; first <= total; ++first)
          for (size_t len = 0; first + len <= total; ++len) {
            std::vector<unsigned char> part(len * es + 1, 0xee);
            FillInputSlice(dt, op, part.data(), total, first, len, 99);
            INFO(DTypeName(dt) << " " << ReduceOpName(op) << " total " << total << " first " << first << " len "
                               << len);
            REQUIRE(std::memcmp(part.data(), whole.data() + first * es, len * es) == 0);
            REQUIRE(part[len * es] == 0xee);  // nothing written past the slice
          }
      }
      const size_t total = 100003;
      std::vector<unsigned char> whole(total * es);
      FillInput(dt, op, whole.data(), total, 5);
      for (size_t first : {size_t{0}, size_t{1}, size_t{12502}, size_t{50001}, size_t{99999}, size_t{100000}}) {
        const size_t len = total - first < 12501 ? total - first : 12501;
        std::vector<unsigned char> part(len * es);
        FillInputSlice(dt, op, part.data(), total, first, len, 5);
        CHECK(std::memcmp(part.data(), whole.data() + first * es, len * es) == 0);
      }
    }
  }
}
