#include "common/extent.h"

#include <cstdint>

namespace hoop {

std::optional<size_t> CheckedMul(size_t a, size_t b) {
  size_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

std::string ExtentProblemSlow(const void* data, size_t count, DType dtype) {
  // The words are made only for a problem: this runs on every call of every collective.
  auto what = [&] { return "count " + std::to_string(count) + " x " + DTypeName(dtype); };
  auto bytes = CheckedMul(count, DTypeSize(dtype));
  if (!bytes) return what() + " is 2^64 bytes or more";
  if (*bytes > static_cast<size_t>(PTRDIFF_MAX))
    return what() + " = " + std::to_string(*bytes) + " bytes is larger than any object can be (2^63 - 1 bytes)";
  const uintptr_t at = reinterpret_cast<uintptr_t>(data);
  if (data && *bytes > UINTPTR_MAX - at)
    return what() + " = " + std::to_string(*bytes) + " bytes runs past the end of the address space from the buffer";
  return "";
}

}  // namespace hoop
