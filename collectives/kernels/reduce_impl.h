// The reduction kernels, written once and compiled once per instruction set: reduce_generic.cc
// (the build's baseline), reduce_avx2.cc (-mavx2 -mf16c) and reduce_avx512.cc (-mavx512f
// -mavx512bw -mavx512vl); reduce.cc picks the best the CPU runs. Each including file defines
// HOOP_KERNEL_NS first, and everything here lives in an unnamed namespace inside it, so no
// function compiled for a wider instruction set can stand in, at link time, for another file's
// (the scalar f16/bf16 conversions of common/dtype.h are always inlined for the same reason).
//
// Native types are plain loops the compiler vectorises. f16 and bf16 are widened to f32 eight
// or sixteen at a time (F16C's conversion instructions; bf16 by shifting), reduced in f32 and
// rounded once to nearest even, exactly as the scalar code does: every instruction set gives
// the same bits, NaN payloads aside. The fp8 formats are widened by table and narrowed by the
// scalar code, also through f32.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "collectives/kernels/reduce.h"

#ifndef HOOP_KERNEL_NS
#error "define HOOP_KERNEL_NS before including reduce_impl.h"
#endif

namespace hoop::kernels::HOOP_KERNEL_NS {
namespace {

template <class T>
struct Native {
  using Compute = T;
  static T Load(T v) { return v; }
  static T Store(T v) { return v; }
};
struct Half {
  using Compute = float;
  static float Load(uint16_t v) { return HalfToFloat(v); }
  static uint16_t Store(float v) { return FloatToHalf(v); }
};
struct BFloat {
  using Compute = float;
  static float Load(uint16_t v) { return BF16ToFloat(v); }
  static uint16_t Store(float v) { return FloatToBF16(v); }
};

// The 8-bit floats decode by table lookup (exact) and encode by the scalar rounding of
// common/dtype.h: there is no vector path, every instruction set runs the same code.
template <class Fmt>
struct Fp8 {
  using Compute = float;
  static constexpr std::array<uint32_t, 256> kBits = F8BitsTable<Fmt>();
  static float Load(uint8_t v) {
    float f;
    std::memcpy(&f, &kBits[v], 4);
    return f;
  }
  static uint8_t Store(float v) { return FloatToF8<Fmt>(v); }
};
using E4M3 = Fp8<F8E4M3Format>;
using E5M2 = Fp8<F8E5M2Format>;

template <class T>
T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <class T>
T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    // Promote u8/u16 through unsigned int so the multiply itself cannot overflow a signed int.
    using P = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    return static_cast<T>(static_cast<U>(static_cast<P>(static_cast<U>(a)) * static_cast<P>(static_cast<U>(b))));
  } else {
    return a * b;
  }
}

// min and max as std::min(a, b) and std::max(a, b) define them (a NaN in b loses), written out
// so no std:: template is instantiated here.
template <ReduceOp Op, class C>
inline C Apply(C a, C b) {
  if constexpr (Op == ReduceOp::kSum || Op == ReduceOp::kAvg) return WrapAdd(a, b);
  if constexpr (Op == ReduceOp::kProd) return WrapMul(a, b);
  if constexpr (Op == ReduceOp::kMin) return b < a ? b : a;
  if constexpr (Op == ReduceOp::kMax) return a < b ? b : a;
  if constexpr (Op == ReduceOp::kBand) return static_cast<C>(a & b);
  if constexpr (Op == ReduceOp::kBor) return static_cast<C>(a | b);
  if constexpr (Op == ReduceOp::kBxor) return static_cast<C>(a ^ b);
}

// ---- f16/bf16 eight (AVX2) or sixteen (AVX-512) at a time ----
#if defined(__AVX512F__) && defined(__AVX512BW__)
constexpr size_t kLanes = 16;
using VecF = __m512;
inline VecF LoadHalf(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
using Bits16 = __m256i;  // kLanes 16-bit values
inline Bits16 HalfBits(VecF v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
inline VecF LoadBF16(const uint16_t* p) {
  __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
inline Bits16 BF16Bits(VecF v) {
  __m512i x = _mm512_castps_si512(v);
  __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_add_epi32(x, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
  __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  r = _mm512_mask_blend_epi32(nan, r, _mm512_or_si512(x, _mm512_set1_epi32(0x400000)));  // quiet
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16));
}
inline void StoreBits(uint16_t* p, Bits16 b) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), b); }
// Non-temporal stores; p aligned to the vector's size.
inline void StreamBits(uint16_t* p, Bits16 b) { _mm256_stream_si256(reinterpret_cast<__m256i*>(p), b); }
inline void StreamF(float* p, VecF v) { _mm512_stream_ps(p, v); }
inline VecF Add(VecF a, VecF b) { return _mm512_add_ps(a, b); }
inline VecF Mul(VecF a, VecF b) { return _mm512_mul_ps(a, b); }
inline VecF Min(VecF a, VecF b) { return _mm512_min_ps(b, a); }  // (b < a) ? b : a
inline VecF Max(VecF a, VecF b) { return _mm512_max_ps(b, a); }  // (b > a) ? b : a
inline VecF Div(VecF a, float d) { return _mm512_div_ps(a, _mm512_set1_ps(d)); }
inline VecF LoadF(const float* p) { return _mm512_loadu_ps(p); }
inline void StoreF(float* p, VecF v) { _mm512_storeu_ps(p, v); }
inline VecF Splat(float f) { return _mm512_set1_ps(f); }
inline VecF Sub(VecF a, VecF b) { return _mm512_sub_ps(a, b); }
inline VecF ZeroNaN(VecF v) { return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v); }
#define HOOP_VEC16 1
#elif defined(__AVX2__) && defined(__F16C__)
constexpr size_t kLanes = 8;
using VecF = __m256;
inline VecF LoadHalf(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
using Bits16 = __m128i;  // kLanes 16-bit values
inline Bits16 HalfBits(VecF v) { return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
inline VecF LoadBF16(const uint16_t* p) {
  __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
inline Bits16 BF16Bits(VecF v) {
  __m256i x = _mm256_castps_si256(v);
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_add_epi32(x, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
  __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  r = _mm256_blendv_epi8(r, _mm256_or_si256(x, _mm256_set1_epi32(0x400000)), nan);  // quiet
  r = _mm256_srli_epi32(r, 16);
  // 32 -> 16 bits: pack within 128-bit halves, then bring the two halves' results together.
  __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0xd8);
  return _mm256_castsi256_si128(packed);
}
inline void StoreBits(uint16_t* p, Bits16 b) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), b); }
inline void StreamBits(uint16_t* p, Bits16 b) { _mm_stream_si128(reinterpret_cast<__m128i*>(p), b); }
inline void StreamF(float* p, VecF v) { _mm256_stream_ps(p, v); }
inline VecF Add(VecF a, VecF b) { return _mm256_add_ps(a, b); }
inline VecF Mul(VecF a, VecF b) { return _mm256_mul_ps(a, b); }
inline VecF Min(VecF a, VecF b) { return _mm256_min_ps(b, a); }
inline VecF Max(VecF a, VecF b) { return _mm256_max_ps(b, a); }
inline VecF Div(VecF a, float d) { return _mm256_div_ps(a, _mm256_set1_ps(d)); }
inline VecF LoadF(const float* p) { return _mm256_loadu_ps(p); }
inline void StoreF(float* p, VecF v) { _mm256_storeu_ps(p, v); }
inline VecF Splat(float f) { return _mm256_set1_ps(f); }
inline VecF Sub(VecF a, VecF b) { return _mm256_sub_ps(a, b); }
inline VecF ZeroNaN(VecF v) { return _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q)); }
#define HOOP_VEC16 1
#endif

#ifdef HOOP_VEC16
inline void StoreHalf(uint16_t* p, VecF v) { StoreBits(p, HalfBits(v)); }
inline void StoreBF16(uint16_t* p, VecF v) { StoreBits(p, BF16Bits(v)); }

template <ReduceOp Op>
inline VecF VApply(VecF a, VecF b) {
  if constexpr (Op == ReduceOp::kSum || Op == ReduceOp::kAvg) return Add(a, b);
  if constexpr (Op == ReduceOp::kProd) return Mul(a, b);
  if constexpr (Op == ReduceOp::kMin) return Min(a, b);
  if constexpr (Op == ReduceOp::kMax) return Max(a, b);
}

// The whole vectors of a 16-bit float kernel; returns how many elements it did.
template <class Codec, ReduceOp Op>
size_t Vector16(uint16_t* d, const uint16_t* x, const uint16_t* y, size_t n, int divisor) {
  constexpr bool half = std::is_same_v<Codec, Half>;
  const bool divide = Op == ReduceOp::kAvg && divisor > 1;
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    VecF a = half ? LoadHalf(x + i) : LoadBF16(x + i);
    VecF b = half ? LoadHalf(y + i) : LoadBF16(y + i);
    VecF r = VApply<Op>(a, b);
    if (divide) r = Div(r, static_cast<float>(divisor));
    if constexpr (half)
      StoreHalf(d + i, r);
    else
      StoreBF16(d + i, r);
  }
  return i;
}
#endif

template <class Storage, class Codec, ReduceOp Op>
void Kernel(void* dst, const void* a, const void* b, size_t n, int divisor) {
  auto* d = static_cast<Storage*>(dst);
  auto* x = static_cast<const Storage*>(a);
  auto* y = static_cast<const Storage*>(b);
  using C = typename Codec::Compute;
  size_t i = 0;
#ifdef HOOP_VEC16
  if constexpr (std::is_same_v<Codec, Half> || std::is_same_v<Codec, BFloat>)
    i = Vector16<Codec, Op>(d, x, y, n, divisor);
#endif
  if (Op == ReduceOp::kAvg && divisor > 1) {
    const C div = static_cast<C>(divisor);
    for (; i < n; ++i) d[i] = Codec::Store(Apply<Op, C>(Codec::Load(x[i]), Codec::Load(y[i])) / div);
    return;
  }
  for (; i < n; ++i) d[i] = Codec::Store(Apply<Op, C>(Codec::Load(x[i]), Codec::Load(y[i])));
}

template <class Storage, class Codec>
ReduceFn ForOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return &Kernel<Storage, Codec, ReduceOp::kSum>;
    case ReduceOp::kAvg: return &Kernel<Storage, Codec, ReduceOp::kAvg>;
    case ReduceOp::kMin: return &Kernel<Storage, Codec, ReduceOp::kMin>;
    case ReduceOp::kMax: return &Kernel<Storage, Codec, ReduceOp::kMax>;
    case ReduceOp::kProd: return &Kernel<Storage, Codec, ReduceOp::kProd>;
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      if constexpr (std::is_integral_v<typename Codec::Compute>) {  // no bitwise ops on floats
        if (op == ReduceOp::kBand) return &Kernel<Storage, Codec, ReduceOp::kBand>;
        if (op == ReduceOp::kBor) return &Kernel<Storage, Codec, ReduceOp::kBor>;
        return &Kernel<Storage, Codec, ReduceOp::kBxor>;
      }
      return nullptr;
  }
  return nullptr;
}

#ifdef HOOP_VEC16
// The same kernel for outputs far larger than the caches (f32, f16 and bf16 sums and averages):
// whole vectors are written with non-temporal stores straight from registers, so dst's lines
// are neither read in first nor left to evict the inputs. Plain stores up to the first aligned
// vector and for the tail; the same bits as Kernel.
template <class Storage, class Codec, ReduceOp Op>
void StreamKernel(void* dst, const void* a, const void* b, size_t n, int divisor) {
  auto* d = static_cast<Storage*>(dst);
  auto* x = static_cast<const Storage*>(a);
  auto* y = static_cast<const Storage*>(b);
  constexpr size_t kAlign = kLanes * sizeof(Storage);  // one vector of results
  size_t head = 0;
  while (head < n && reinterpret_cast<uintptr_t>(d + head) % kAlign != 0) ++head;
  if (head == n || reinterpret_cast<uintptr_t>(d) % sizeof(Storage) != 0)
    return Kernel<Storage, Codec, Op>(dst, a, b, n, divisor);
  Kernel<Storage, Codec, Op>(d, x, y, head, divisor);
  const bool divide = Op == ReduceOp::kAvg && divisor > 1;
  size_t i = head;
  for (; i + kLanes <= n; i += kLanes) {
    VecF r;
    if constexpr (std::is_same_v<Codec, Half>)
      r = VApply<Op>(LoadHalf(x + i), LoadHalf(y + i));
    else if constexpr (std::is_same_v<Codec, BFloat>)
      r = VApply<Op>(LoadBF16(x + i), LoadBF16(y + i));
    else
      r = VApply<Op>(LoadF(x + i), LoadF(y + i));
    if (divide) r = Div(r, static_cast<float>(divisor));
    if constexpr (std::is_same_v<Codec, Half>)
      StreamBits(d + i, HalfBits(r));
    else if constexpr (std::is_same_v<Codec, BFloat>)
      StreamBits(d + i, BF16Bits(r));
    else
      StreamF(d + i, r);
  }
  _mm_sfence();
  Kernel<Storage, Codec, Op>(d + i, x + i, y + i, n - i, divisor);
}
#endif

template <class Storage, class Codec>
void DivideAll(void* dst, size_t n, int divisor) {
  auto* d = static_cast<Storage*>(dst);
  using C = typename Codec::Compute;
  for (size_t i = 0; i < n; ++i) d[i] = Codec::Store(Codec::Load(d[i]) / static_cast<C>(divisor));
}

}  // namespace

void Divide(DType dtype, void* dst, size_t n, int divisor) {
  switch (dtype) {
    case DType::kU8: return DivideAll<uint8_t, Native<uint8_t>>(dst, n, divisor);
    case DType::kI32: return DivideAll<int32_t, Native<int32_t>>(dst, n, divisor);
    case DType::kI64: return DivideAll<int64_t, Native<int64_t>>(dst, n, divisor);
    case DType::kF16: return DivideAll<uint16_t, Half>(dst, n, divisor);
    case DType::kBF16: return DivideAll<uint16_t, BFloat>(dst, n, divisor);
    case DType::kF32: return DivideAll<float, Native<float>>(dst, n, divisor);
    case DType::kF64: return DivideAll<double, Native<double>>(dst, n, divisor);
    case DType::kI8: return DivideAll<int8_t, Native<int8_t>>(dst, n, divisor);
    case DType::kI16: return DivideAll<int16_t, Native<int16_t>>(dst, n, divisor);
    case DType::kU16: return DivideAll<uint16_t, Native<uint16_t>>(dst, n, divisor);
    case DType::kU32: return DivideAll<uint32_t, Native<uint32_t>>(dst, n, divisor);
    case DType::kU64: return DivideAll<uint64_t, Native<uint64_t>>(dst, n, divisor);
    case DType::kBool: return;  // bool has no average (OpApplies)
    case DType::kF8E4M3: return DivideAll<uint8_t, E4M3>(dst, n, divisor);
    case DType::kF8E5M2: return DivideAll<uint8_t, E5M2>(dst, n, divisor);
  }
}

// The streaming kernels this instruction set has (see StreamKernel), else nullptr.
ReduceFn LookupStream(DType dtype, ReduceOp op) {
#ifdef HOOP_VEC16
  if (op != ReduceOp::kSum && op != ReduceOp::kAvg) return nullptr;
  const bool sum = op == ReduceOp::kSum;
  switch (dtype) {
    case DType::kF32:
      return sum ? &StreamKernel<float, Native<float>, ReduceOp::kSum>
                 : &StreamKernel<float, Native<float>, ReduceOp::kAvg>;
    case DType::kF16:
      return sum ? &StreamKernel<uint16_t, Half, ReduceOp::kSum> : &StreamKernel<uint16_t, Half, ReduceOp::kAvg>;
    case DType::kBF16:
      return sum ? &StreamKernel<uint16_t, BFloat, ReduceOp::kSum> : &StreamKernel<uint16_t, BFloat, ReduceOp::kAvg>;
    default: return nullptr;
  }
#else
  (void)dtype;
  (void)op;
  return nullptr;
#endif
}

ReduceFn Lookup(DType dtype, ReduceOp op) {
  switch (dtype) {
    case DType::kU8: return ForOp<uint8_t, Native<uint8_t>>(op);
    case DType::kI32: return ForOp<int32_t, Native<int32_t>>(op);
    case DType::kI64: return ForOp<int64_t, Native<int64_t>>(op);
    case DType::kF16: return ForOp<uint16_t, Half>(op);
    case DType::kBF16: return ForOp<uint16_t, BFloat>(op);
    case DType::kF32: return ForOp<float, Native<float>>(op);
    case DType::kF64: return ForOp<double, Native<double>>(op);
    case DType::kI8: return ForOp<int8_t, Native<int8_t>>(op);
    case DType::kI16: return ForOp<int16_t, Native<int16_t>>(op);
    case DType::kU16: return ForOp<uint16_t, Native<uint16_t>>(op);
    case DType::kU32: return ForOp<uint32_t, Native<uint32_t>>(op);
    case DType::kU64: return ForOp<uint64_t, Native<uint64_t>>(op);
    case DType::kBool: return OpApplies(dtype, op) ? ForOp<uint8_t, Native<uint8_t>>(op) : nullptr;
    case DType::kF8E4M3: return ForOp<uint8_t, E4M3>(op);
    case DType::kF8E5M2: return ForOp<uint8_t, E5M2>(op);
  }
  return nullptr;
}

}  // namespace hoop::kernels::HOOP_KERNEL_NS
