// Batched scaled copies of device memory (kernels/cuda/copy.cu): many (dst, src, count, factor)
// items of one dtype in one kernel launch (up to kDeviceCopyBatch items a launch, more in as many
// launches as needed). The tensor fusion runtime packs a group's device tensors into its device
// fusion buffer with their prescale, and unpacks them with their postscale, this way: one launch
// instead of a copy per tensor. The same bits as the host's fusion::ScaledCopy (tensorfusion/
// scale.h): f16 and bf16 scaled in f32 and rounded once to nearest even, f32 in f32, f64 in f64; a
// factor of 1 copies the bits as they are (integers are never scaled). Items must not overlap
// one another; an item may copy onto itself (dst == src).
//
// Queued on `stream` (a cudaStream_t; nullptr: the legacy default one), never waited for.
// Unimplemented in a build without CUDA.
#pragma once

#include <cstddef>

#include "common/dtype.h"
#include "common/status.h"

namespace hoop {

struct DeviceCopyItem {
  void* dst = nullptr;
  const void* src = nullptr;
  size_t count = 0;  // elements
  double factor = 1;
};

inline constexpr size_t kDeviceCopyBatch = 32;

Status DeviceBatchedScaledCopy(DType dtype, const DeviceCopyItem* items, size_t n, void* stream);

}  // namespace hoop
