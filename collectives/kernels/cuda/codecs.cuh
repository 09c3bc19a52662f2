// The element codecs of the device kernels (reduce.cu, wire.cu): how each storage type is read
// into the type arithmetic is done in, and written back. f16 and bf16 use the hardware
// conversions (exact widening; narrowing rounds to nearest even like the host code, subnormals
// kept), except for NaN, where the host code (common/dtype.h) keeps the payload and the hardware
// does not: there the host's bits are built explicitly, so device and host give the same bits.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

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

}  // namespace hoop::cuda
