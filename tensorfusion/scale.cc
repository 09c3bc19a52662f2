#include "tensorfusion/scale.h"

#include <cstdint>
#include <cstring>

namespace hoop::fusion {

namespace {

template <class T>
void Scale(T* dst, const T* src, size_t n, T factor) {
  for (size_t i = 0; i < n; ++i) dst[i] = src[i] * factor;
}

template <class S, float (*Load)(S), S (*Store)(float)>
void ScaleNarrow(S* dst, const S* src, size_t n, float factor) {
  for (size_t i = 0; i < n; ++i) dst[i] = Store(Load(src[i]) * factor);
}

uint16_t ToHalf(float f) { return FloatToHalf(f); }
float FromHalf(uint16_t h) { return HalfToFloat(h); }
uint16_t ToBF16(float f) { return FloatToBF16(f); }
float FromBF16(uint16_t h) { return BF16ToFloat(h); }
uint8_t ToE4M3(float f) { return FloatToF8E4M3(f); }
float FromE4M3(uint8_t c) { return F8E4M3ToFloat(c); }
uint8_t ToE5M2(float f) { return FloatToF8E5M2(f); }
float FromE5M2(uint8_t c) { return F8E5M2ToFloat(c); }

template <class S, float (*Load)(S), S (*Store)(float)>
void Narrow(void* dst, const void* src, size_t n, double factor) {
  ScaleNarrow<S, Load, Store>(static_cast<S*>(dst), static_cast<const S*>(src), n, static_cast<float>(factor));
}

}  // namespace

void ScaledCopy(DType dtype, void* dst, const void* src, size_t count, double factor) {
  if (count == 0) return;
  if (factor == 1) {
    if (dst != src) std::memmove(dst, src, count * DTypeSize(dtype));
    return;
  }
  switch (dtype) {
    case DType::kF32:
      Scale(static_cast<float*>(dst), static_cast<const float*>(src), count, static_cast<float>(factor));
      return;
    case DType::kF64: Scale(static_cast<double*>(dst), static_cast<const double*>(src), count, factor); return;
    case DType::kF16: return Narrow<uint16_t, FromHalf, ToHalf>(dst, src, count, factor);
    case DType::kBF16: return Narrow<uint16_t, FromBF16, ToBF16>(dst, src, count, factor);
    case DType::kF8E4M3: return Narrow<uint8_t, FromE4M3, ToE4M3>(dst, src, count, factor);
    case DType::kF8E5M2: return Narrow<uint8_t, FromE5M2, ToE5M2>(dst, src, count, factor);
    default:  // integers: refused before they get here
      std::memmove(dst, src, count * DTypeSize(dtype));
  }
}

}  // namespace hoop::fusion
