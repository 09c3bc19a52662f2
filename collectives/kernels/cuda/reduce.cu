// The reduction kernels on a CUDA device (kernels/device_reduce.h): one template per element
// type and op, as the host kernels (kernels/reduce_impl.h), giving the same bits.
//
// Memory-bound, so the kernel is about moving bytes: each thread loads 16 bytes of each input
// (one uint4: 4 f32, 8 bf16, 16 i8...), reduces them in registers and stores 16 bytes, in a
// grid-stride loop. The elements before the first 16-byte boundary and after the last one are
// done one at a time by the same launch (one launch per call, whatever the alignment), as long
// as the three pointers are equally misaligned; otherwise every element goes one at a time.
//
// f16, bf16 and the fp8s go through cuda/codecs.cuh (the host's bits, NaNs included). Arithmetic is IEEE
// (nvcc's defaults: no flush to zero, correctly rounded division), as on the host. f16 vectors
// with no NaN in them, in or out, take the paired conversions and one NaN test per vector
// (HalfVector): element by element, the codec's NaN handling and conversions bound f16 at 0.83-0.88
// of a device copy on an H200, where bf16 and f32 reach 1.01.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "collectives/kernels/cuda/codecs.cuh"
#include "collectives/kernels/device_reduce.h"

namespace hoop {
namespace {

using cuda::BFloat;
using cuda::Half;
using cuda::Native;

template <class T>
__device__ T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <class T>
__device__ T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    using P = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    return static_cast<T>(static_cast<U>(static_cast<P>(static_cast<U>(a)) * static_cast<P>(static_cast<U>(b))));
  } else {
    return a * b;
  }
}

// min and max exactly as the host writes them (a NaN in b loses).
template <ReduceOp Op, class C>
__device__ __forceinline__ C Apply(C a, C b) {
  if constexpr (Op == ReduceOp::kSum || Op == ReduceOp::kAvg) return WrapAdd(a, b);
  if constexpr (Op == ReduceOp::kProd) return WrapMul(a, b);
  if constexpr (Op == ReduceOp::kMin) return b < a ? b : a;
  if constexpr (Op == ReduceOp::kMax) return a < b ? b : a;
  if constexpr (Op == ReduceOp::kBand) return static_cast<C>(a & b);
  if constexpr (Op == ReduceOp::kBor) return static_cast<C>(a | b);
  if constexpr (Op == ReduceOp::kBxor) return static_cast<C>(a ^ b);
}

template <class S, class Codec, ReduceOp Op>
__device__ __forceinline__ S One(S x, S y, int divisor) {
  using C = typename Codec::Compute;
  C r = Apply<Op, C>(Codec::Load(x), Codec::Load(y));
  if constexpr (Op == ReduceOp::kAvg) {
    if (divisor > 1) r = static_cast<C>(r / static_cast<C>(divisor));
  }
  return Codec::Store(r);
}

// Whether any of the two f16 elements in w is a NaN (exponent all ones, mantissa not zero).
__device__ __forceinline__ uint32_t HalfNaNs(uint32_t w) { return __vcmpgtu2(w & 0x7fff7fffu, 0x7c007c00u); }

// Eight f16 elements of a and b (one uint4 each) reduced with One's float operations, so with its
// bits, but converted two at a time and tested for NaN once. false where an input or a result is a
// NaN (the hardware packs any float NaN to a half NaN, and nothing else to one): the caller then
// goes element by element, which builds the host's NaN bits.
template <ReduceOp Op>
__device__ __forceinline__ bool HalfVector(const uint4& xa, const uint4& xb, int divisor, uint4* out) {
  const uint32_t wa[4] = {xa.x, xa.y, xa.z, xa.w}, wb[4] = {xb.x, xb.y, xb.z, xb.w};
  uint32_t wr[4], nan = 0;
#pragma unroll
  for (int k = 0; k < 4; ++k) nan |= HalfNaNs(wa[k]) | HalfNaNs(wb[k]);
  if (nan != 0) return false;
  const auto pair = [](uint32_t w) {
    return __half22float2(__halves2half2(__ushort_as_half(static_cast<unsigned short>(w & 0xffffu)),
                                         __ushort_as_half(static_cast<unsigned short>(w >> 16))));
  };
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 fa = pair(wa[k]), fb = pair(wb[k]);
    float2 fr = make_float2(Apply<Op, float>(fa.x, fb.x), Apply<Op, float>(fa.y, fb.y));
    if constexpr (Op == ReduceOp::kAvg) {
      if (divisor > 1) fr = make_float2(fr.x / static_cast<float>(divisor), fr.y / static_cast<float>(divisor));
    }
    const __half2 h = __float22half2_rn(fr);
    wr[k] = static_cast<uint32_t>(__half_as_ushort(__low2half(h))) |
            (static_cast<uint32_t>(__half_as_ushort(__high2half(h))) << 16);
    nan |= HalfNaNs(wr[k]);
  }
  if (nan != 0) return false;
  *out = make_uint4(wr[0], wr[1], wr[2], wr[3]);
  return true;
}

constexpr unsigned kThreads = 256;
constexpr size_t kVecBytes = 16;

// Elements [0, head) and [head + nvec * per, n) one at a time; the 16-byte vectors between.
template <class S, class Codec, ReduceOp Op>
__global__ void __launch_bounds__(kThreads)
    Reduce(S* d, const S* a, const S* b, size_t head, size_t nvec, size_t n, int divisor) {
  constexpr size_t kPer = kVecBytes / sizeof(S);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t tail = head + nvec * kPer;
  const size_t loose = head + (n - tail);
  for (size_t i = first; i < loose; i += stride) {
    const size_t j = i < head ? i : tail + (i - head);
    d[j] = One<S, Codec, Op>(a[j], b[j], divisor);
  }
  const uint4* va = reinterpret_cast<const uint4*>(a + head);
  const uint4* vb = reinterpret_cast<const uint4*>(b + head);
  uint4* vd = reinterpret_cast<uint4*>(d + head);
  for (size_t v = first; v < nvec; v += stride) {
    uint4 xa = va[v], xb = vb[v], r;
    if constexpr (std::is_same_v<Codec, Half>) {
      if (HalfVector<Op>(xa, xb, divisor, &r)) {
        vd[v] = r;
        continue;
      }
    }
    const S* pa = reinterpret_cast<const S*>(&xa);
    const S* pb = reinterpret_cast<const S*>(&xb);
    S* pr = reinterpret_cast<S*>(&r);
#pragma unroll
    for (size_t k = 0; k < kPer; ++k) pr[k] = One<S, Codec, Op>(pa[k], pb[k], divisor);
    vd[v] = r;
  }
}

template <class S, class Codec, ReduceOp Op>
Status Launch(void* dst, const void* a, const void* b, size_t n, int divisor, void* stream) {
  if (n == 0) return Status::Ok();
  constexpr size_t kPer = kVecBytes / sizeof(S);
  const auto at = [](const void* p) { return reinterpret_cast<uintptr_t>(p); };
  size_t head = n, nvec = 0;  // no common alignment: every element one at a time
  if (at(dst) % kVecBytes == at(a) % kVecBytes && at(dst) % kVecBytes == at(b) % kVecBytes &&
      at(dst) % sizeof(S) == 0) {
    head = ((kVecBytes - at(dst) % kVecBytes) % kVecBytes) / sizeof(S);
    if (head > n) head = n;
    nvec = (n - head) / kPer;
  }
  const size_t work = nvec + kPer;  // threads wanted: one per vector, and the loose elements
  const unsigned blocks = static_cast<unsigned>(std::min<size_t>((work + kThreads - 1) / kThreads, 32768));
  Reduce<S, Codec, Op><<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<S*>(dst), static_cast<const S*>(a), static_cast<const S*>(b), head, nvec, n, divisor);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return Internal(std::string("launching a reduction kernel: ") + cudaGetErrorString(e) + " (error " +
                    std::to_string(static_cast<int>(e)) + ")");
  return Status::Ok();
}

template <class S, class Codec>
DeviceReduceFn ForOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return &Launch<S, Codec, ReduceOp::kSum>;
    case ReduceOp::kAvg: return &Launch<S, Codec, ReduceOp::kAvg>;
    case ReduceOp::kMin: return &Launch<S, Codec, ReduceOp::kMin>;
    case ReduceOp::kMax: return &Launch<S, Codec, ReduceOp::kMax>;
    case ReduceOp::kProd: return &Launch<S, Codec, ReduceOp::kProd>;
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      if constexpr (std::is_integral_v<typename Codec::Compute>) {
        if (op == ReduceOp::kBand) return &Launch<S, Codec, ReduceOp::kBand>;
        if (op == ReduceOp::kBor) return &Launch<S, Codec, ReduceOp::kBor>;
        return &Launch<S, Codec, ReduceOp::kBxor>;
      }
      return nullptr;
  }
  return nullptr;
}

}  // namespace

DeviceReduceFn LookupDeviceReduce(DType dtype, ReduceOp op) {
  if (!OpApplies(dtype, op)) return nullptr;
  switch (dtype) {
    case DType::kU8: return ForOp<uint8_t, Native<uint8_t>>(op);
    case DType::kI8: return ForOp<int8_t, Native<int8_t>>(op);
    case DType::kI32: return ForOp<int32_t, Native<int32_t>>(op);
    case DType::kI64: return ForOp<int64_t, Native<int64_t>>(op);
    case DType::kI16: return ForOp<int16_t, Native<int16_t>>(op);
    case DType::kU16: return ForOp<uint16_t, Native<uint16_t>>(op);
    case DType::kU32: return ForOp<uint32_t, Native<uint32_t>>(op);
    case DType::kU64: return ForOp<uint64_t, Native<uint64_t>>(op);
    case DType::kF16: return ForOp<uint16_t, Half>(op);
    case DType::kBF16: return ForOp<uint16_t, BFloat>(op);
    case DType::kF32: return ForOp<float, Native<float>>(op);
    case DType::kF64: return ForOp<double, Native<double>>(op);
    case DType::kBool: return ForOp<uint8_t, Native<uint8_t>>(op);
    case DType::kF8E4M3: return ForOp<uint8_t, cuda::E4M3>(op);
    case DType::kF8E5M2: return ForOp<uint8_t, cuda::E5M2>(op);
  }
  return nullptr;
}

}  // namespace hoop
