// The fp16/bf16 wire codec (kernels/wire.h) on a CUDA device (kernels/cuda/wire.cu): the same
// four kernels with the same scaling and the same bits as the host's for the same input, each
// queued on a stream and never waited for. The largest magnitude comes back as the bits of the
// data type's value (|x| orders as its bits do) in an 8-byte word the caller provides (device or
// pinned memory, set to 0 first by the kernel's launch), to be read once the stream has reached
// it and turned into the value with AbsMaxFromBits; the caller then picks the scale exponent
// with WireScaleExponent, as the host path does.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/kernels/wire.h"

namespace hoop {

struct DeviceWireKernels {
  Status (*absmax)(const void* x, const void* add, size_t n, uint64_t* bits_out, void* stream);
  Status (*encode)(uint16_t* w, void* round_out, const void* x, const void* res_add, void* res_out, size_t n,
                   double scale, double inv, double res_mult, void* stream);
  Status (*decode_add)(void* out, const void* src, const void* res_add, const uint16_t* w, size_t n, double inv,
                       int divisor, void* stream);
  Status (*decode)(void* out, const uint16_t* w, size_t n, double inv, void* stream);
};

// nullptr where (data, c) is not a codec, or this build has no CUDA.
const DeviceWireKernels* LookupDeviceWire(DType data, Compression c);
// The value whose magnitude bits an absmax kernel left (f32 bits in the low half for f32 data).
double AbsMaxFromBits(DType data, uint64_t bits);

}  // namespace hoop
