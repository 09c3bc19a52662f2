// The element codecs of the device kernels (reduce.cu, wire.cu): how each storage type is read
// into the type arithmetic is done in, and written back. f16 and bf16 use the hardware
// conversions (exact widening; narrowing rounds to nearest even like the host code, subnormals
// kept), except for NaN, where the host code (common/dtype.h) keeps the payload and the hardware
// does not: there the host's bits are built explicitly, so device and host give the same bits.
// The fp8 formats widen exactly (through f16) and narrow with CUDA's round-to-nearest-even,
// saturating conversion, which the host code (common/dtype.h) matches bit for bit, NaN as 0x7f.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

namespace hoop::cuda {

template <class T>
struct Native {
  using Compute = T;
  __device__ static T Load(T v) { return v; }
  __device__ static T Store(T v) { return v; }
};
struct Half {
  using Compute = float;
  __device__ static float Load(uint16_t v) {
    if ((v & 0x7c00u) == 0x7c00u && (v & 0x3ffu) != 0)  // NaN: the payload kept, as on the host
      return __uint_as_float((static_cast<uint32_t>(v & 0x8000u) << 16) | 0x7f800000u |
                             (static_cast<uint32_t>(v & 0x3ffu) << 13));
    return __half2float(__ushort_as_half(v));
  }
  __device__ static uint16_t Store(float f) {
    const uint32_t x = __float_as_uint(f), ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return static_cast<uint16_t>(((x >> 16) & 0x8000u) | 0x7e00u | ((ax >> 13) & 0x3ffu));
    return __half_as_ushort(__float2half_rn(f));
  }
};
struct BFloat {
  using Compute = float;
  __device__ static float Load(uint16_t v) { return __uint_as_float(static_cast<uint32_t>(v) << 16); }
  __device__ static uint16_t Store(float f) {
    const uint32_t x = __float_as_uint(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
  }
};

template <__nv_fp8_interpretation_t Kind>
struct Fp8 {
  using Compute = float;
  __device__ static float Load(uint8_t v) {
    return __half2float(__half(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(v), Kind)));
  }
  __device__ static uint8_t Store(float f) {
    return static_cast<uint8_t>(__nv_cvt_float_to_fp8(f, __NV_SATFINITE, Kind));
  }
};
using E4M3 = Fp8<__NV_E4M3>;
using E5M2 = Fp8<__NV_E5M2>;

}  // namespace hoop::cuda
