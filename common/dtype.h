// Element types and reduction operators, and the f16/bf16 <-> f32 conversions that every
// reduced-precision path uses (reduce in f32, round once, round-to-nearest-even).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

namespace hoop {

// New types are appended: the values are the C API's (include/hoop/hoop.h). Bool elements are
// one byte, 0 or 1.
enum class DType : uint8_t { kU8 = 0, kI32, kI64, kF16, kBF16, kF32, kF64, kI8, kBool };
inline constexpr DType kAllDTypes[] = {DType::kU8,   DType::kI8,  DType::kI32, DType::kI64, DType::kF16,
                                       DType::kBF16, DType::kF32, DType::kF64, DType::kBool};
inline constexpr DType kLastDType = DType::kBool;  // the highest value: decoders range-check with it

// Bytes per element (0 for a value outside the enum). Inline: every call's checks ask it.
constexpr size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kU8:
    case DType::kI8:
    case DType::kBool: return 1;
    case DType::kF16:
    case DType::kBF16: return 2;
    case DType::kI32:
    case DType::kF32: return 4;
    case DType::kI64:
    case DType::kF64: return 8;
  }
  return 0;
}
const char* DTypeName(DType t);  // "f32", "bf16", ...
std::optional<DType> ParseDType(const std::string& name);

// Bitwise and, or and xor (kBand, kBor, kBxor) apply to the integer types and bool only.
enum class ReduceOp : uint8_t { kSum = 0, kAvg, kMin, kMax, kProd, kBand, kBor, kBxor };
inline constexpr ReduceOp kAllReduceOps[] = {ReduceOp::kSum,  ReduceOp::kAvg,  ReduceOp::kMin, ReduceOp::kMax,
                                             ReduceOp::kProd, ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor};
inline constexpr ReduceOp kLastReduceOp = ReduceOp::kBxor;  // the highest value
const char* ReduceOpName(ReduceOp op);
std::optional<ReduceOp> ParseReduceOp(const std::string& name);

bool IsFloat(DType t);  // f16, bf16, f32, f64
// Whether `op` reduces `t`: the bitwise ops take no floats; bool takes min, max (and, or) and
// the bitwise ops, not sum, avg or prod.
bool OpApplies(DType t, ReduceOp op);
// Why `op` does not reduce `t`, for an error message ("" when it does).
std::string OpMismatch(DType t, ReduceOp op);

// Where a buffer lives: host memory, CUDA device memory, or CUDA's host-visible kinds (pinned
// host memory, managed memory), which the host reads and writes like its own.
enum class MemKind : uint8_t { kHost = 0, kCuda, kCudaPinned, kCudaManaged };
const char* MemKindName(MemKind k);                             // "host", "cuda", "cuda-pinned", "cuda-managed"
inline constexpr MemKind kLastMemKind = MemKind::kCudaManaged;  // the highest value: decoders range-check with it
constexpr bool HostVisible(MemKind k) { return k != MemKind::kCuda; }

// The scalar f16/bf16 conversions, rounding to nearest even. Always inlined: the reduction
// kernels are compiled once per instruction set, and an out-of-line copy built for AVX-512 must
// never be the one another file links to.
[[gnu::always_inline]] inline float HalfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);  // inf / nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    int e = -1;
    do {
      ++e;
      man <<= 1;
    } while ((man & 0x400) == 0);
    bits = sign | uint32_t(112 - e) << 23 | ((man & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

[[gnu::always_inline]] inline uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t ax = x & 0x7fffffff;
  if (ax > 0x7f800000u) return uint16_t(sign | 0x7e00 | ((ax >> 13) & 0x3ff));  // quiet nan, as F16C
  if (ax == 0x7f800000u) return uint16_t(sign | 0x7c00);
  if (ax >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // rounds to >= 65520: inf
  if (ax < 0x38800000u) {                                 // result is subnormal or zero
    if (ax < 0x33000000u) return uint16_t(sign);          // below half the smallest subnormal
    uint32_t e = ax >> 23;
    uint32_t m = (ax & 0x7fffff) | 0x800000;
    uint32_t shift = 126 - e;  // 14..24
    uint32_t r = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
    return uint16_t(sign | r);
  }
  uint32_t r = ax - 0x38000000u;  // rebias exponent 127 -> 15 (in place)
  uint32_t lsb = (r >> 13) & 1;
  r += 0xfff + lsb;  // round to nearest even
  return uint16_t(sign | (r >> 13));
}

[[gnu::always_inline]] inline float BF16ToFloat(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

[[gnu::always_inline]] inline uint16_t FloatToBF16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);  // quiet nan
  x += 0x7fff + ((x >> 16) & 1);
  return uint16_t(x >> 16);
}

}  // namespace hoop
