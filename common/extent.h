// Extents: whether `count` elements of a type can be one buffer.
//
// hoop multiplies counts by element sizes and by rank counts everywhere. A product that wraps
// past 2^64 names a tiny buffer (an allreduce of 2^62 f32 would be "0 bytes": a success that did
// nothing) or one that runs off the caller's memory (2^62 + 1 f32: 4 bytes, then a crash when the
// schedule's offsets are used). Every entry point (the C and C++ collectives, the tensor fusion
// runtime and its C API) asks here first and refuses with a message naming the count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "common/dtype.h"

namespace hoop {

// a * b, or nullopt when the product does not fit in size_t.
std::optional<size_t> CheckedMul(size_t a, size_t b);

// Why `count` elements of `dtype` at `data` cannot be one buffer, or "" when they can: the byte
// size overflows 64 bits, exceeds PTRDIFF_MAX (the largest object C and C++ allow), or runs past
// the end of the address space from `data` (data may be null: only the size is checked then).
// The text starts with the count: "count 4611686018427387904 x f32 is 2^64 bytes or more".
std::string ExtentProblemSlow(const void* data, size_t count, DType dtype);
inline std::string ExtentProblem(const void* data, size_t count, DType dtype) {
  // Every call of every collective and send asks: the usual answer without a call. Below 2^56
  // elements (of at most 8 bytes: under 2^59 bytes), in a buffer below the top 2^60 bytes of
  // the address space, no product can wrap or pass the limits.
  constexpr size_t kFew = size_t{1} << 56;
  if (count < kFew && reinterpret_cast<uintptr_t>(data) < UINTPTR_MAX - (kFew << 4)) return {};
  return ExtentProblemSlow(data, count, dtype);
}

}  // namespace hoop
