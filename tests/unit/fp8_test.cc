// The dtype table and the 8-bit floats: every code decoded against the formula, encoding's
// rounding, saturation and NaN, and the table's names each parsed back to their dtype.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <set>
#include <string>

#include "common/dtype.h"

using namespace hoop;

namespace {
// The value of a code from the OCP formula, in double: (-1)^s 2^(e - bias) (1 + m / 2^M), or
// for e == 0, (-1)^s 2^(1 - bias) (m / 2^M).
double Formula(uint8_t c, int E, int M) {
  const int bias = (1 << (E - 1)) - 1;
  const int e = (c >> M) & ((1 << E) - 1), m = c & ((1 << M) - 1);
  const double s = (c & 0x80) ? -1 : 1;
  if (E == 4 && (c & 0x7f) == 0x7f) return std::numeric_limits<double>::quiet_NaN();
  if (E == 5 && e == 31) return m ? std::numeric_limits<double>::quiet_NaN() : s * INFINITY;
  if (e == 0) return s * std::ldexp(m, 1 - bias - M);
  return s * std::ldexp(1.0 + std::ldexp(m, -M), e - bias);
}
float Decode(DType t, uint8_t c) { return t == DType::kF8E4M3 ? F8E4M3ToFloat(c) : F8E5M2ToFloat(c); }
uint8_t Encode(DType t, float f) { return t == DType::kF8E4M3 ? FloatToF8E4M3(f) : FloatToF8E5M2(f); }
}  // namespace

TEST_CASE("every fp8 code decodes to the OCP formula's value", "[dtype][fp8]") {
  for (auto [t, E, M] : {std::tuple{DType::kF8E4M3, 4, 3}, std::tuple{DType::kF8E5M2, 5, 2}}) {
    for (unsigned c = 0; c < 256; ++c) {
      INFO(DTypeName(t) << " code 0x" << std::hex << c);
      const double want = Formula(static_cast<uint8_t>(c), E, M);
      const float got = Decode(t, static_cast<uint8_t>(c));
      if (std::isnan(want)) {
        CHECK(std::isnan(got));
        continue;
      }
      CHECK(static_cast<double>(got) == want);
      CHECK(std::signbit(got) == bool(c & 0x80));
    }
  }
  CHECK(F8E4M3ToFloat(0x7e) == 448.0f);
  CHECK(F8E5M2ToFloat(0x7b) == 57344.0f);
  CHECK(F8E4M3ToFloat(0x01) == std::ldexp(1.0f, -9));
  CHECK(F8E5M2ToFloat(0x01) == std::ldexp(1.0f, -16));
  CHECK(F8E5M2ToFloat(0x7c) == INFINITY);
  CHECK(F8E5M2ToFloat(0xfc) == -INFINITY);
}

TEST_CASE("fp8 encoding rounds to nearest even and saturates, NaN as 0x7f", "[dtype][fp8]") {
  for (DType t : {DType::kF8E4M3, DType::kF8E5M2}) {
    INFO(DTypeName(t));
    const uint8_t max_code = t == DType::kF8E4M3 ? 0x7e : 0x7b;
    // Every finite code comes back as itself.
    for (unsigned c = 0; c < 256; ++c) {
      const float f = Decode(t, static_cast<uint8_t>(c));
      if (std::isfinite(f)) CHECK(Encode(t, f) == c);
    }
    // Between neighbours: a quarter of the way goes down, three quarters up, the midpoint to
    // the even code (codes are monotone in magnitude, so the even neighbour is the even code).
    for (unsigned c = 0; c < max_code; ++c) {
      const double lo = Decode(t, static_cast<uint8_t>(c)), hi = Decode(t, static_cast<uint8_t>(c + 1));
      INFO("between 0x" << std::hex << c << " and 0x" << c + 1);
      CHECK(Encode(t, static_cast<float>(lo + (hi - lo) / 4)) == c);
      CHECK(Encode(t, static_cast<float>(lo + 3 * (hi - lo) / 4)) == c + 1);
      CHECK(Encode(t, static_cast<float>((lo + hi) / 2)) == ((c & 1) ? c + 1 : c));
      CHECK(Encode(t, static_cast<float>(-(lo + hi) / 2)) == (0x80 | ((c & 1) ? c + 1 : c)));
    }
    // Past the largest finite, infinities too: the largest finite of that sign.
    const float top = Decode(t, max_code);
    for (float f : {top * 1.01f, top * 2, 1e30f, INFINITY}) {
      CHECK(Encode(t, f) == max_code);
      CHECK(Encode(t, -f) == (0x80 | max_code));
    }
    CHECK(Encode(t, std::numeric_limits<float>::quiet_NaN()) == 0x7f);
    CHECK(Encode(t, -std::numeric_limits<float>::quiet_NaN()) == 0x7f);
    // Below half the smallest subnormal: zero of the sign; exactly half: the even one, zero.
    const float tiny = Decode(t, 1);
    CHECK(Encode(t, tiny / 2) == 0x00);
    CHECK(Encode(t, -tiny / 2) == 0x80);
    CHECK(Encode(t, tiny * 0.51f) == 0x01);
    CHECK(Encode(t, std::numeric_limits<float>::denorm_min()) == 0x00);
    CHECK(Encode(t, -0.0f) == 0x80);
  }
}

TEST_CASE("fp8 encoding is the nearest code for random floats", "[dtype][fp8]") {
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> bits;
  for (DType t : {DType::kF8E4M3, DType::kF8E5M2}) {
    const uint8_t max_code = t == DType::kF8E4M3 ? 0x7e : 0x7b;
    // 20k draws per format (the seed above): the first wrong one is reported, not each, so the
    // check costs little under the sanitizers.
    int wrong = 0;
    std::string first;
    for (int k = 0; k < 20000; ++k) {
      uint32_t b = bits(rng);
      // Exponents near the format's range, where the rounding happens.
      b = (b & 0x807fffffu) | ((100u + (b >> 23) % 60u) << 23);
      float f;
      std::memcpy(&f, &b, 4);
      const uint8_t c = Encode(t, f);
      const double got = Decode(t, c), x = f;
      double best = INFINITY;
      for (unsigned d = 0; d <= max_code; ++d) best = std::min(best, std::fabs(std::fabs(x) - Decode(t, d)));
      const bool near = std::fabs(x) > Decode(t, max_code) || std::fabs(std::fabs(got) - std::fabs(x)) == best;
      if ((!near || std::signbit(got) != std::signbit(x)) && wrong++ == 0) {
        std::ostringstream os;
        os << DTypeName(t) << ": " << f << " -> code 0x" << std::hex << unsigned(c) << " (" << got << ")";
        first = os.str();
      }
    }
    INFO(first);
    CHECK(wrong == 0);
  }
}

TEST_CASE("the dtype table: one row per dtype, each name parses back to it", "[dtype]") {
  std::set<std::string> names;
  for (const DTypeInfo& row : kDTypeTable) {
    INFO(row.name);
    CHECK(names.insert(row.name).second);
    CHECK(DTypeSize(row.type) == row.size);
    CHECK(ParseDType(row.name) == row.type);
    for (const char* other : {row.numpy, row.torch})
      if (*other) CHECK(ParseDType(other) == row.type);
    std::string c_lower = row.c_name;
    for (char& ch : c_lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    CHECK(ParseDType(c_lower) == row.type);
    if (*row.torch) CHECK(ParseDType(std::string("torch.") + row.torch) == row.type);
    for (ReduceOp op : kAllReduceOps) CHECK(OpApplies(row.type, op) == OpMismatch(row.type, op).empty());
  }
  CHECK(ParseDType("float8_e4m3fn") == DType::kF8E4M3);
  CHECK(ParseDType("e5m2") == DType::kF8E5M2);
  CHECK_FALSE(ParseDType("f8"));
  CHECK_FALSE(ParseDType(""));
  CHECK(IsFloat(DType::kF8E4M3));
  CHECK_FALSE(OpApplies(DType::kF8E5M2, ReduceOp::kBxor));
  CHECK(OpMismatch(DType::kF8E4M3, ReduceOp::kBand) == "band takes integer and bool elements, not f8e4m3");
  CHECK(DTypeNames().find("f8e5m2") != std::string::npos);
}

#ifdef HOOP_TEST_CUDA_FP8
#include <cuda_fp8.h>

// CUDA's own conversion (its host code, which the device's satfinite conversion matches): the
// device kernels narrow with it (cuda/codecs.cuh), so host and device give the same bits only if
// this holds. Every float whose exponent lies near the formats' range, sampled, and the edges.
TEST_CASE("fp8 encoding gives CUDA's __NV_SATFINITE bits", "[dtype][fp8]") {
  std::mt19937 rng(5);
  std::uniform_int_distribution<uint32_t> bits;
  // Mismatches are counted and the first is reported, so that 200k draws stay cheap under the
  // sanitizers.
  int wrong = 0;
  std::string first;
  auto check = [&](float f) {
    const unsigned e4 = FloatToF8E4M3(f), e5 = FloatToF8E5M2(f);
    const unsigned c4 = __nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E4M3);
    const unsigned c5 = __nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E5M2);
    if ((e4 != c4 || e5 != c5) && wrong++ == 0) {
      std::ostringstream os;
      os << f << ": e4m3 0x" << std::hex << e4 << " (CUDA 0x" << c4 << "), e5m2 0x" << e5 << " (CUDA 0x" << c5 << ")";
      first = os.str();
    }
  };
  for (int k = 0; k < 200000; ++k) {
    uint32_t b = bits(rng);
    if (k % 2) b = (b & 0x807fffffu) | ((90u + (b >> 23) % 80u) << 23);
    float f;
    std::memcpy(&f, &b, 4);
    check(f);
  }
  for (float f : {0.0f, -0.0f, INFINITY, -INFINITY, std::numeric_limits<float>::quiet_NaN(), 448.0f, 464.0f, 465.0f,
                  57344.0f, 61440.0f, 61439.0f, std::numeric_limits<float>::denorm_min(), 1e-30f})
    check(f);
  INFO(first);
  CHECK(wrong == 0);
  for (unsigned c = 0; c < 256; ++c) {  // decoding: CUDA's widening to f16, then to f32
    for (auto [t, kind] : {std::pair{DType::kF8E4M3, __NV_E4M3}, std::pair{DType::kF8E5M2, __NV_E5M2}}) {
      const float cuda = __half2float(__half(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(c), kind)));
      const float mine = Decode(t, static_cast<uint8_t>(c));
      INFO(DTypeName(t) << " code " << c);
      if (std::isnan(cuda))
        CHECK(std::isnan(mine));
      else
        CHECK(cuda == mine);
    }
  }
}
#endif
