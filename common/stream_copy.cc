#include "common/stream_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace hoop {

void CopyStreaming(void* dst, const void* src, size_t bytes) {
#if defined(__SSE2__)
  auto* d = static_cast<char*>(dst);
  auto* x = static_cast<const char*>(src);
  size_t head = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;
  if (head >= bytes) {
    std::memcpy(d, x, bytes);
    return;
  }
  std::memcpy(d, x, head);
  size_t i = head;
  for (; i + 64 <= bytes; i += 64) {
    auto* o = reinterpret_cast<__m128i*>(d + i);
    const auto* in = reinterpret_cast<const __m128i*>(x + i);
    __m128i a = _mm_loadu_si128(in), b = _mm_loadu_si128(in + 1), c = _mm_loadu_si128(in + 2),
            e = _mm_loadu_si128(in + 3);
    _mm_stream_si128(o, a);
    _mm_stream_si128(o + 1, b);
    _mm_stream_si128(o + 2, c);
    _mm_stream_si128(o + 3, e);
  }
  _mm_sfence();
  std::memcpy(d + i, x + i, bytes - i);
#else
  std::memcpy(dst, src, bytes);
#endif
}

}  // namespace hoop
