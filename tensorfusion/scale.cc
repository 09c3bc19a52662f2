#include "tensorfusion/scale.h"

#include <cstdint>
#include <cstring>

namespace hoop::fusion {

namespace {

template <class T>
void Scale(T* dst, const T* src, size_t n, T factor) {
  for (size_t i = 0; i < n; ++i) dst[i] = src[i] * factor;
}

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void ScaleHalf(uint16_t* dst, const uint16_t* src, size_t n, float factor) {
  for (size_t i = 0; i < n; ++i) dst[i] = Store(Load(src[i]) * factor);
}

uint16_t ToHalf(float f) { return FloatToHalf(f); }
float FromHalf(uint16_t h) { return HalfToFloat(h); }
uint16_t ToBF16(float f) { return FloatToBF16(f); }
float FromBF16(uint16_t h) { return BF16ToFloat(h); }

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
    case DType::kF16:
      ScaleHalf<FromHalf, ToHalf>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count,
                                  static_cast<float>(factor));
      return;
    case DType::kBF16:
      ScaleHalf<FromBF16, ToBF16>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count,
                                  static_cast<float>(factor));
      return;
    default:  // integers: refused before they get here
      std::memmove(dst, src, count * DTypeSize(dtype));
  }
}

}  // namespace hoop::fusion
