// kernels/device_copy.h: batched scaled copies. One launch takes up to kDeviceCopyBatch items by
// value (a kernel parameter of about 1 KiB, no upload); block row y copies item y with a
// grid-stride loop over its elements. Scaling goes through the codecs the reduction kernels use
// (codecs.cuh), which give the host's bits.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "collectives/kernels/cuda/codecs.cuh"
#include "collectives/kernels/device_copy.h"

namespace hoop {
namespace {

struct Batch {
  DeviceCopyItem items[kDeviceCopyBatch];
};

template <class Codec, class S>
__global__ void ScaledCopyKernel(const Batch b) {
  const DeviceCopyItem& it = b.items[blockIdx.y];
  const S* src = static_cast<const S*>(it.src);
  S* dst = static_cast<S*>(it.dst);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (it.factor == 1.0) {
    for (; i < it.count; i += stride) dst[i] = src[i];
    return;
  }
  const auto f = static_cast<typename Codec::Compute>(it.factor);
  for (; i < it.count; i += stride) dst[i] = Codec::Store(Codec::Load(src[i]) * f);
}

template <class Codec, class S>
Status Launch(const DeviceCopyItem* items, size_t n, size_t elem_scale, void* stream) {
  for (size_t at = 0; at < n; at += kDeviceCopyBatch) {
    Batch b{};
    const size_t k = std::min(kDeviceCopyBatch, n - at);
    size_t most = 0;
    for (size_t j = 0; j < k; ++j) {
      b.items[j] = items[at + j];
      b.items[j].count *= elem_scale;  // integers travel as bytes
      most = std::max(most, b.items[j].count);
    }
    if (most == 0) continue;
    constexpr unsigned kThreads = 256;
    const unsigned blocks = static_cast<unsigned>(std::min<size_t>((most + kThreads - 1) / kThreads, 1024));
    ScaledCopyKernel<Codec, S>
        <<<dim3(blocks, static_cast<unsigned>(k)), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(b);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
      return Internal(std::string("launching the batched copy kernel: ") + cudaGetErrorString(e) + " (error " +
                      std::to_string(static_cast<int>(e)) + ")");
  }
  return Status::Ok();
}

}  // namespace

Status DeviceBatchedScaledCopy(DType dtype, const DeviceCopyItem* items, size_t n, void* stream) {
  switch (dtype) {
    case DType::kF32: return Launch<cuda::Native<float>, float>(items, n, 1, stream);
    case DType::kF64: return Launch<cuda::Native<double>, double>(items, n, 1, stream);
    case DType::kF16: return Launch<cuda::Half, uint16_t>(items, n, 1, stream);
    case DType::kBF16: return Launch<cuda::BFloat, uint16_t>(items, n, 1, stream);
    case DType::kF8E4M3: return Launch<cuda::E4M3, uint8_t>(items, n, 1, stream);
    case DType::kF8E5M2: return Launch<cuda::E5M2, uint8_t>(items, n, 1, stream);
    default:
      for (size_t j = 0; j < n; ++j)
        if (items[j].factor != 1)
          return InvalidArgument(std::string("a batched copy of ") + DTypeName(dtype) + " cannot scale (factor " +
                                 std::to_string(items[j].factor) + ")");
      return Launch<cuda::Native<uint8_t>, uint8_t>(items, n, DTypeSize(dtype), stream);
  }
}

}  // namespace hoop
