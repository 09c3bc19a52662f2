#include "collectives/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "collectives/kernels/reduce.h"

namespace hoop {
namespace {
uint64_t SplitMix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
double ValueFor(DType dtype, ReduceOp op, uint64_t r) {
  bool is_unsigned = dtype == DType::kU8;
  if (dtype == DType::kBool) return static_cast<double>(r & 1);
  switch (op) {
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:  // random bits, the sign bit among them for the signed types
      if (dtype == DType::kU8) return static_cast<double>(r & 0xff);
      if (dtype == DType::kI8) return static_cast<double>(static_cast<int>(r & 0xff) - 128);
      return static_cast<double>(static_cast<int64_t>(r & 0xfffff) - (1 << 19));
    case ReduceOp::kProd: {
      static const double choices[] = {-2, -1, 1, 2};
      static const double uchoices[] = {1, 2, 1, 2};
      return is_unsigned ? uchoices[r % 4] : choices[r % 4];
    }
    case ReduceOp::kMin:
    case ReduceOp::kMax:
      if (dtype == DType::kI8) return static_cast<double>(static_cast<int>(r % 256) - 128);
      return is_unsigned ? static_cast<double>(r % 256) : static_cast<double>(static_cast<int>(r % 1001) - 500);
    default:
      return is_unsigned ? static_cast<double>(r % 17) : static_cast<double>(static_cast<int>(r % 17) - 8);
  }
}
template <class T>
void Put(void* buf, size_t i, double v) {
  static_cast<T*>(buf)[i] = static_cast<T>(v);
}
}  // namespace

void FillInput(DType dtype, ReduceOp op, void* buf, size_t count, uint64_t seed) {
  uint64_t s = seed * 0x2545f4914f6cdd1dull + 1;
  for (size_t i = 0; i < count; ++i) {
    double v = ValueFor(dtype, op, SplitMix(s));
    switch (dtype) {
      case DType::kU8: Put<uint8_t>(buf, i, v); break;
      case DType::kI32: Put<int32_t>(buf, i, v); break;
      case DType::kI64: Put<int64_t>(buf, i, v); break;
      case DType::kF16: static_cast<uint16_t*>(buf)[i] = FloatToHalf(static_cast<float>(v)); break;
      case DType::kBF16: static_cast<uint16_t*>(buf)[i] = FloatToBF16(static_cast<float>(v)); break;
      case DType::kF32: Put<float>(buf, i, v); break;
      case DType::kF64: Put<double>(buf, i, v); break;
      case DType::kI8: Put<int8_t>(buf, i, v); break;
      case DType::kBool: Put<uint8_t>(buf, i, v); break;
    }
  }
}

void ReferenceReduce(DType dtype, ReduceOp op, const std::vector<const void*>& inputs, void* out,
                     size_t count) {
  size_t bytes = count * DTypeSize(dtype);
  if (inputs.empty() || bytes == 0) return;
  std::memcpy(out, inputs[0], bytes);
  ReduceFn fn = LookupReduce(dtype, op == ReduceOp::kAvg ? ReduceOp::kSum : op, MemKind::kHost);
  for (size_t i = 1; i < inputs.size(); ++i) fn(out, out, inputs[i], count, 0);
  if (op == ReduceOp::kAvg) DivideInPlace(dtype, out, count, static_cast<int>(inputs.size()));
}

size_t CountMismatches(DType dtype, const void* got, const void* want, size_t count) {
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) {
    bool same;
    switch (dtype) {
      case DType::kF16:
        same = HalfToFloat(static_cast<const uint16_t*>(got)[i]) == HalfToFloat(static_cast<const uint16_t*>(want)[i]);
        break;
      case DType::kBF16:
        same = BF16ToFloat(static_cast<const uint16_t*>(got)[i]) == BF16ToFloat(static_cast<const uint16_t*>(want)[i]);
        break;
      case DType::kF32: same = static_cast<const float*>(got)[i] == static_cast<const float*>(want)[i]; break;
      case DType::kF64: same = static_cast<const double*>(got)[i] == static_cast<const double*>(want)[i]; break;
      default: {
        size_t w = DTypeSize(dtype);
        same = std::memcmp(static_cast<const char*>(got) + i * w, static_cast<const char*>(want) + i * w, w) == 0;
      }
    }
    bad += same ? 0 : 1;
  }
  return bad;
}

void FillMixed(DType dtype, void* buf, size_t count, uint64_t seed) {
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 3;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t r = SplitMix(s);
    const double mant = 1.0 + static_cast<double>(r >> 11 & 0xfffff) / double(1 << 20);
    const int e = static_cast<int>((r >> 40) % 49) - 24;
    const double v = (r & 1 ? -1.0 : 1.0) * std::ldexp(mant, e);
    if (dtype == DType::kF64) static_cast<double*>(buf)[i] = v;
    else static_cast<float*>(buf)[i] = static_cast<float>(v);
  }
}

BoundCheck CheckCompressedBound(DType dtype, ReduceOp op, Compression c, const std::vector<const void*>& inputs,
                                const void* got, size_t count) {
  auto at = [&](const void* p, size_t i) {
    return dtype == DType::kF64 ? static_cast<const double*>(p)[i] : double(static_cast<const float*>(p)[i]);
  };
  const int n = static_cast<int>(inputs.size());
  const double div = op == ReduceOp::kAvg ? n : 1;
  std::vector<double> exact(count), abs_sum(count);
  double m = 0;
  for (size_t i = 0; i < count; ++i) {
    for (const void* in : inputs) {
      exact[i] += at(in, i);
      abs_sum[i] += std::fabs(at(in, i));
    }
    if (std::isfinite(abs_sum[i])) m = std::max(m, abs_sum[i]);
  }
  const double g = CompressionErrorFactor(c, n);
  BoundCheck r;
  for (size_t i = 0; i < count; ++i) {
    const double want = exact[i] / div, v = at(got, i);
    if (!std::isfinite(want)) {
      const bool same = std::isnan(want) ? std::isnan(v) : v == want;
      r.outside += same ? 0 : 1;
      if (!same) r.worst = INFINITY;
      continue;
    }
    const double bound = g * (abs_sum[i] + std::ldexp(m, -24)) / div;
    const double err = std::fabs(v - want);
    const double ratio = bound > 0 ? err / bound : (err == 0 ? 0 : INFINITY);
    if (!(ratio <= 1)) ++r.outside;
    r.worst = std::max(r.worst, std::isnan(ratio) ? INFINITY : ratio);
  }
  return r;
}

}  // namespace hoop
