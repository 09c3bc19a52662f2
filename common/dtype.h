// Element types (one table row each) and reduction operators, and the f16/bf16/fp8 <-> f32
// conversions that every reduced-precision path uses (reduce in f32, round once, to nearest
// even).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

namespace hoop {

// New types are appended: the values are the C API's (include/hoop/hoop.h). Bool elements are
// one byte, 0 or 1. f8e4m3 and f8e5m2 are the OCP 8-bit floats as NCCL 2.24 names them (e4m3 is
// the "fn" variant: no infinities, one NaN pattern per sign, largest finite 448; e5m2 has
// infinities, largest finite 57344). i16, u16, u32 and u64 came last (Horovod's int16 and uint16,
// NCCL's uint32 and uint64).
enum class DType : uint8_t {
  kU8 = 0,
  kI32,
  kI64,
  kF16,
  kBF16,
  kF32,
  kF64,
  kI8,
  kBool,
  kF8E4M3,
  kF8E5M2,
  kI16,
  kU16,
  kU32,
  kU64
};

// Bitwise and, or and xor (kBand, kBor, kBxor) apply to the integer types and bool only.
enum class ReduceOp : uint8_t { kSum = 0, kAvg, kMin, kMax, kProd, kBand, kBor, kBxor };
inline constexpr ReduceOp kAllReduceOps[] = {ReduceOp::kSum,  ReduceOp::kAvg,  ReduceOp::kMin, ReduceOp::kMax,
                                             ReduceOp::kProd, ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor};
inline constexpr ReduceOp kLastReduceOp = ReduceOp::kBxor;  // the highest value
constexpr uint8_t OpBit(ReduceOp op) {                      // 0 for a value outside the enum
  return static_cast<unsigned>(op) < 8 ? static_cast<uint8_t>(1u << static_cast<unsigned>(op)) : 0;
}

enum class DTypeClass : uint8_t { kUnsigned, kSigned, kFloat, kBool };

// One row per element type: everything a layer needs to know about a dtype is here (the C
// API's range check, Python's names and the torch backend's mapping through hoop_dtype_info,
// hoop-perf's -d, fusion's checks, the error messages). A new dtype is a row here, its C enumerator, and its codec in
// the kernels (collectives/kernels/reduce_impl.h, cuda/codecs.cuh).
struct DTypeInfo {
  DType type;
  const char* name;  // hoop's own name: "f32", "f8e4m3"
  uint8_t size;      // bytes per element
  DTypeClass cls;
  uint8_t ops;          // OpBit of every ReduceOp that reduces it
  const char* c_name;   // the C API's enumerator, less HOOP_: "F32" (also the Python module's name)
  const char* numpy;    // NumPy's dtype name, or ml_dtypes' where NumPy has none (bfloat16, the fp8s)
  const char* torch;    // torch's dtype attribute (torch.float8_e4m3fn), "" if torch has none
  const char* aten;     // c10::ScalarType's name, as c10::toString prints it
  const char* aliases;  // other names ParseDType takes, space-separated
};

inline constexpr uint8_t kFloatOps = OpBit(ReduceOp::kSum) | OpBit(ReduceOp::kAvg) | OpBit(ReduceOp::kMin) |
                                     OpBit(ReduceOp::kMax) | OpBit(ReduceOp::kProd);
inline constexpr uint8_t kBitwiseOps = OpBit(ReduceOp::kBand) | OpBit(ReduceOp::kBor) | OpBit(ReduceOp::kBxor);
inline constexpr uint8_t kIntOps = kFloatOps | kBitwiseOps;
inline constexpr uint8_t kBoolOps = OpBit(ReduceOp::kMin) | OpBit(ReduceOp::kMax) | kBitwiseOps;

// Indexed by the DType's value (checked below).
inline constexpr DTypeInfo kDTypeTable[] = {
    {DType::kU8, "u8", 1, DTypeClass::kUnsigned, kIntOps, "U8", "uint8", "uint8", "Byte", "uint8"},
    {DType::kI32, "i32", 4, DTypeClass::kSigned, kIntOps, "I32", "int32", "int32", "Int", "int32"},
    {DType::kI64, "i64", 8, DTypeClass::kSigned, kIntOps, "I64", "int64", "int64", "Long", "int64"},
    {DType::kF16, "f16", 2, DTypeClass::kFloat, kFloatOps, "F16", "float16", "float16", "Half", "half float16"},
    {DType::kBF16, "bf16", 2, DTypeClass::kFloat, kFloatOps, "BF16", "bfloat16", "bfloat16", "BFloat16", "bfloat16"},
    {DType::kF32, "f32", 4, DTypeClass::kFloat, kFloatOps, "F32", "float32", "float32", "Float", "float float32"},
    {DType::kF64, "f64", 8, DTypeClass::kFloat, kFloatOps, "F64", "float64", "float64", "Double", "double float64"},
    {DType::kI8, "i8", 1, DTypeClass::kSigned, kIntOps, "I8", "int8", "int8", "Char", "int8"},
    {DType::kBool, "bool", 1, DTypeClass::kBool, kBoolOps, "BOOL", "bool", "bool", "Bool", ""},
    {DType::kF8E4M3, "f8e4m3", 1, DTypeClass::kFloat, kFloatOps, "F8E4M3", "float8_e4m3fn", "float8_e4m3fn",
     "Float8_e4m3fn", "float8_e4m3fn e4m3"},
    {DType::kF8E5M2, "f8e5m2", 1, DTypeClass::kFloat, kFloatOps, "F8E5M2", "float8_e5m2", "float8_e5m2", "Float8_e5m2",
     "float8_e5m2 e5m2"},
    {DType::kI16, "i16", 2, DTypeClass::kSigned, kIntOps, "I16", "int16", "int16", "Short", "int16 short"},
    {DType::kU16, "u16", 2, DTypeClass::kUnsigned, kIntOps, "U16", "uint16", "uint16", "UInt16", "uint16"},
    {DType::kU32, "u32", 4, DTypeClass::kUnsigned, kIntOps, "U32", "uint32", "uint32", "UInt32", "uint32"},
    {DType::kU64, "u64", 8, DTypeClass::kUnsigned, kIntOps, "U64", "uint64", "uint64", "UInt64", "uint64"},
};
inline constexpr size_t kNumDTypes = sizeof(kDTypeTable) / sizeof(kDTypeTable[0]);
inline constexpr DType kLastDType = DType::kU64;  // the highest value: decoders range-check with it
constexpr bool DTypeTableInOrder() {
  for (size_t i = 0; i < kNumDTypes; ++i)
    if (static_cast<size_t>(kDTypeTable[i].type) != i) return false;
  return static_cast<size_t>(kLastDType) + 1 == kNumDTypes;
}
static_assert(DTypeTableInOrder(), "kDTypeTable's rows are in DType order, one per value");
// Sizes are powers of two: element counts are byte counts shifted (CommCore::ChunkElems).
constexpr bool DTypeSizesArePowersOfTwo() {
  for (const DTypeInfo& row : kDTypeTable)
    if (row.size == 0 || (row.size & (row.size - 1)) != 0) return false;
  return true;
}
static_assert(DTypeSizesArePowersOfTwo(), "every dtype's size is a power of two");

// Every dtype, in the order tests and hoop-perf -d all walk them.
inline constexpr DType kAllDTypes[] = {DType::kU8,  DType::kI8,  DType::kI16,  DType::kU16,    DType::kI32,
                                       DType::kU32, DType::kI64, DType::kU64,  DType::kF16,    DType::kBF16,
                                       DType::kF32, DType::kF64, DType::kBool, DType::kF8E4M3, DType::kF8E5M2};
static_assert(sizeof(kAllDTypes) / sizeof(kAllDTypes[0]) == kNumDTypes);

constexpr bool ValidDType(DType t) { return static_cast<size_t>(t) < kNumDTypes; }
// The row of a valid dtype (the caller has checked; decoders use ValidDType).
constexpr const DTypeInfo& DTypeRow(DType t) { return kDTypeTable[static_cast<size_t>(t)]; }
// Bytes per element (0 for a value outside the enum). Inline: every call's checks ask it.
constexpr size_t DTypeSize(DType t) { return ValidDType(t) ? DTypeRow(t).size : 0; }
const char* DTypeName(DType t);  // "f32", "bf16", ... ("?" outside the enum)
// hoop's names, the C enumerators' (case aside), NumPy's, torch's and the aliases.
std::optional<DType> ParseDType(const std::string& name);
// Every hoop name, for a usage line: "u8, i8, ..., f8e5m2".
std::string DTypeNames();

constexpr const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kAvg: return "avg";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kProd: return "prod";
    case ReduceOp::kBand: return "band";
    case ReduceOp::kBor: return "bor";
    case ReduceOp::kBxor: return "bxor";
  }
  return "?";
}
std::optional<ReduceOp> ParseReduceOp(const std::string& name);

bool IsFloat(DType t);  // f16, bf16, f32, f64, f8e4m3, f8e5m2
// Whether `op` reduces `t`: the bitwise ops take no floats; bool takes min, max (and, or) and
// the bitwise ops, not sum, avg or prod.
constexpr bool OpApplies(DType t, ReduceOp op) { return ValidDType(t) && (DTypeRow(t).ops & OpBit(op)); }
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

// The 8-bit floats: E exponent bits, M mantissa bits, bias 2^(E-1) - 1. Decoding is exact.
// Encoding rounds to nearest even and saturates as NCCL and CUDA's __NV_SATFINITE do: a
// magnitude past the largest finite (infinities too) becomes the largest finite of its sign, and
// every NaN becomes 0x7f. e4m3 ("fn") has no infinities and 0x7f / 0xff are its NaNs; e5m2 keeps
// IEEE's all-ones exponent for infinities and NaNs.
template <int E, int M>
struct F8Format {
  static constexpr int kE = E, kM = M;
  static constexpr int kBias = (1 << (E - 1)) - 1;
  static constexpr bool kFn = E == 4;                      // e4m3fn: only S.1111.111 is NaN
  static constexpr uint32_t kMaxCode = kFn ? 0x7e : 0x7b;  // the largest finite magnitude
};
using F8E4M3Format = F8Format<4, 3>;
using F8E5M2Format = F8Format<5, 2>;

// The f32 bits of an fp8 value (constexpr, so tables of them are made at compile time).
template <class Fmt>
constexpr uint32_t F8ToFloatBits(uint8_t c) {
  constexpr int E = Fmt::kE, M = Fmt::kM;
  const uint32_t sign = uint32_t(c & 0x80) << 24;
  const uint32_t exp = (c >> M) & ((1u << E) - 1);
  const uint32_t man = c & ((1u << M) - 1);
  uint32_t bits = 0;
  if (Fmt::kFn ? (c & 0x7f) == 0x7f : exp == (1u << E) - 1) {
    bits = sign | 0x7f800000u | (man ? 0x400000u : 0);  // e5m2's infinities; a quiet NaN
  } else if (exp != 0) {
    bits = sign | (exp + 127 - Fmt::kBias) << 23 | man << (23 - M);
  } else if (man == 0) {
    bits = sign;
  } else {  // subnormal: man * 2^(1 - bias - M), normalised
    int shift = 0;
    uint32_t m = man;
    while ((m & (1u << M)) == 0) {
      m <<= 1;
      ++shift;
    }
    bits = sign | uint32_t(127 + 1 - Fmt::kBias - shift) << 23 | (m & ((1u << M) - 1)) << (23 - M);
  }
  return bits;
}

template <class Fmt>
[[gnu::always_inline]] inline float F8ToFloat(uint8_t c) {
  const uint32_t bits = F8ToFloatBits<Fmt>(c);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// The f32 bits of all 256 values of a format, made at compile time (the host kernels decode by
// lookup, and no code runs at load time in a file built for a wider instruction set).
template <class Fmt>
constexpr std::array<uint32_t, 256> F8BitsTable() {
  std::array<uint32_t, 256> t{};
  for (unsigned c = 0; c < 256; ++c) t[c] = F8ToFloatBits<Fmt>(static_cast<uint8_t>(c));
  return t;
}

// Branch-free, so the kernels' loops vectorise: normal results by rebiasing the exponent in
// place and rounding the dropped bits to nearest even (as FloatToHalf); subnormal ones by adding
// 2^(24 - bias - M), whose float ulp is the format's smallest subnormal, so that the float
// addition itself rounds to nearest even; then the saturation and the NaN chosen.
template <class Fmt>
[[gnu::always_inline]] inline uint8_t FloatToF8(float f) {
  constexpr int M = Fmt::kM;
  constexpr uint32_t kMinNormal = uint32_t(127 + 1 - Fmt::kBias) << 23;   // f32 bits of 2^(1 - bias)
  constexpr uint32_t kMagic = uint32_t(127 + 24 - Fmt::kBias - M) << 23;  // f32 bits of 2^(24 - bias - M)
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 24) & 0x80;
  const uint32_t ax = x & 0x7fffffff;
  uint32_t r = ax - ((127u - Fmt::kBias) << 23);
  r += (1u << (22 - M)) - 1 + ((r >> (23 - M)) & 1);
  uint32_t normal = r >> (23 - M);
  normal = normal > Fmt::kMaxCode ? Fmt::kMaxCode : normal;  // past the largest finite, infinity too
  float a, magic;
  std::memcpy(&a, &ax, 4);
  std::memcpy(&magic, &kMagic, 4);
  const float t = a + magic;  // rounds a to a multiple of the smallest subnormal
  uint32_t tb;
  std::memcpy(&tb, &t, 4);
  const uint32_t sub = tb - kMagic;  // may reach 1 << M: the smallest normal, encoded the same way
  const uint32_t code = ax < kMinNormal ? sub : normal;
  return uint8_t(ax > 0x7f800000u ? 0x7fu : (sign | code));
}

[[gnu::always_inline]] inline float F8E4M3ToFloat(uint8_t c) { return F8ToFloat<F8E4M3Format>(c); }
[[gnu::always_inline]] inline uint8_t FloatToF8E4M3(float f) { return FloatToF8<F8E4M3Format>(f); }
[[gnu::always_inline]] inline float F8E5M2ToFloat(uint8_t c) { return F8ToFloat<F8E5M2Format>(c); }
[[gnu::always_inline]] inline uint8_t FloatToF8E5M2(float f) { return FloatToF8<F8E5M2Format>(f); }

// Any element as a double and back (the reference, scaling and tests; not the kernels' path):
// floats convert exactly one way and round to nearest even the other; integers truncate.
double LoadAsDouble(DType t, const void* p, size_t i);
void StoreFromDouble(DType t, void* p, size_t i, double v);

}  // namespace hoop
