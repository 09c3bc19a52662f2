#include "collectives/testing/reference.h"

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
// A uniform integer in [0, span) from the top 32 bits of r (multiply and shift: no division).
uint32_t Below(uint64_t r, uint32_t span) { return static_cast<uint32_t>(((r >> 32) * span) >> 32); }

// The values one (dtype, op) draws from: `span` equally likely ones, lo, lo + 1, ..., or the
// entries of `choices` where the set is not a range.
struct Draw {
  int64_t lo = 0;
  uint32_t span = 1;
  const int64_t* choices = nullptr;
  int64_t at(uint32_t k) const { return choices ? choices[k] : lo + k; }
};

Draw DrawFor(DType dtype, ReduceOp op) {
  static const int64_t kProdChoices[] = {-2, -1, 1, 2};
  const bool is_unsigned = DTypeRow(dtype).cls == DTypeClass::kUnsigned;
  if (dtype == DType::kBool) return {0, 2};
  // The 8-bit floats hold every integer up to 16 (e4m3) or 8 (e5m2) exactly: sums of up to 8
  // ranks' values stay exact in any order only when drawn this small.
  const bool fp8 = dtype == DType::kF8E4M3 || dtype == DType::kF8E5M2;
  if (fp8 && (op == ReduceOp::kSum || op == ReduceOp::kAvg)) return dtype == DType::kF8E4M3 ? Draw{-2, 5} : Draw{-1, 3};
  switch (op) {
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:  // random bits, the sign bit among them for the signed types
      if (dtype == DType::kU8) return {0, 256};
      if (dtype == DType::kI8) return {-128, 256};
      if (dtype == DType::kU16) return {0, 1 << 16};
      if (dtype == DType::kI16) return {-(1 << 15), 1 << 16};
      return is_unsigned ? Draw{0, 1 << 20} : Draw{-(1 << 19), 1 << 20};
    case ReduceOp::kProd: return is_unsigned ? Draw{1, 2} : Draw{0, 4, kProdChoices};
    case ReduceOp::kMin:
    case ReduceOp::kMax:
      if (dtype == DType::kI8) return {-128, 256};
      return is_unsigned ? Draw{0, 256} : Draw{-500, 1001};
    default: return is_unsigned ? Draw{0, 17} : Draw{-8, 17};
  }
}

// One loop per element type: small sets are converted once into a table (so f16 and bf16 cost
// a lookup, not a conversion, per element); the one wide set (bits for i32/i64) converts directly.
// Elements [first, first + len) of a fill of `total`: the stream is seekable, since SplitMix's
// k-th word depends only on the seed and k, so a slice is made without the elements before it.
// Small sets take four 16-bit draws from each word while four elements remain, then one word per
// element (a bias of under 2^-6 is no matter here).
template <class T, class Conv>
void FillAs(void* buf, size_t total, size_t first, size_t len, uint64_t seed, const Draw& d, Conv conv) {
  T* out = static_cast<T*>(buf);
  constexpr uint32_t kTable = 1024;
  constexpr uint64_t kStep = 0x9e3779b97f4a7c15ull;  // SplitMix's increment: word k starts from seed + k * kStep
  const size_t end = first + len;
  if (d.span > kTable) {
    uint64_t s = seed + first * kStep;
    for (size_t i = first; i < end; ++i) out[i - first] = conv(d.at(Below(SplitMix(s), d.span)));
    return;
  }
  T table[kTable];
  for (uint32_t k = 0; k < d.span; ++k) table[k] = conv(d.at(k));
  const uint64_t span = d.span;
  const size_t quads = total / 4 * 4;  // elements drawn four to a word
  size_t i = first;
  if (i < quads && i % 4 != 0) {  // a slice starting inside a word: its lanes up to the next word
    uint64_t s = seed + i / 4 * kStep;
    const uint64_t r = SplitMix(s);
    for (; i % 4 != 0 && i < end; ++i) out[i - first] = table[((r >> (16 * (i % 4)) & 0xffff) * span) >> 16];
  }
  uint64_t s = seed + i / 4 * kStep;
  const size_t quad_end = std::min(end, quads);
  for (; i + 4 <= quad_end; i += 4) {
    const uint64_t r = SplitMix(s);
    out[i - first] = table[((r & 0xffff) * span) >> 16];
    out[i - first + 1] = table[((r >> 16 & 0xffff) * span) >> 16];
    out[i - first + 2] = table[((r >> 32 & 0xffff) * span) >> 16];
    out[i - first + 3] = table[((r >> 48) * span) >> 16];
  }
  if (i < quad_end) {  // a slice ending inside a word
    const uint64_t r = SplitMix(s);
    for (; i < quad_end; ++i) out[i - first] = table[((r >> (16 * (i % 4)) & 0xffff) * span) >> 16];
  }
  if (i >= quads) {  // past the words of four: word quads / 4 + (i - quads) for element i
    s = seed + (quads / 4 + (i - quads)) * kStep;
    for (; i < end; ++i) out[i - first] = table[Below(SplitMix(s), d.span)];
  }
}
template <class T>
T Cast(int64_t v) {
  return static_cast<T>(v);
}
// A 16- or 8-bit float's code for a drawn value (exact: the draws are small integers).
template <class T>
struct Coded {
  DType dtype;
  T operator()(int64_t v) const {
    T code;
    StoreFromDouble(dtype, &code, 0, static_cast<double>(v));
    return code;
  }
};
}  // namespace

void FillInput(DType dtype, ReduceOp op, void* buf, size_t count, uint64_t seed) {
  FillInputSlice(dtype, op, buf, count, 0, count, seed);
}

void FillInputSlice(DType dtype, ReduceOp op, void* buf, size_t total, size_t first, size_t len, uint64_t seed) {
  const uint64_t s = seed * 0x2545f4914f6cdd1dull + 1;
  const Draw d = DrawFor(dtype, op);
  switch (dtype) {
    case DType::kU8:
    case DType::kBool: FillAs<uint8_t>(buf, total, first, len, s, d, Cast<uint8_t>); break;
    case DType::kI8: FillAs<int8_t>(buf, total, first, len, s, d, Cast<int8_t>); break;
    case DType::kI32: FillAs<int32_t>(buf, total, first, len, s, d, Cast<int32_t>); break;
    case DType::kI64: FillAs<int64_t>(buf, total, first, len, s, d, Cast<int64_t>); break;
    case DType::kI16: FillAs<int16_t>(buf, total, first, len, s, d, Cast<int16_t>); break;
    case DType::kU16: FillAs<uint16_t>(buf, total, first, len, s, d, Cast<uint16_t>); break;
    case DType::kU32: FillAs<uint32_t>(buf, total, first, len, s, d, Cast<uint32_t>); break;
    case DType::kU64: FillAs<uint64_t>(buf, total, first, len, s, d, Cast<uint64_t>); break;
    case DType::kF32: FillAs<float>(buf, total, first, len, s, d, Cast<float>); break;
    case DType::kF64: FillAs<double>(buf, total, first, len, s, d, Cast<double>); break;
    case DType::kF16:
    case DType::kBF16: FillAs<uint16_t>(buf, total, first, len, s, d, Coded<uint16_t>{dtype}); break;
    case DType::kF8E4M3:
    case DType::kF8E5M2: FillAs<uint8_t>(buf, total, first, len, s, d, Coded<uint8_t>{dtype}); break;
  }
}

void ReferenceReduce(DType dtype, ReduceOp op, const std::vector<const void*>& inputs, void* out, size_t count) {
  size_t bytes = count * DTypeSize(dtype);
  if (inputs.empty() || bytes == 0) return;
  std::memcpy(out, inputs[0], bytes);
  ReduceFn fn = LookupReduce(dtype, op == ReduceOp::kAvg ? ReduceOp::kSum : op, MemKind::kHost);
  for (size_t i = 1; i < inputs.size(); ++i) fn(out, out, inputs[i], count, 0);
  if (op == ReduceOp::kAvg) DivideInPlace(dtype, out, count, static_cast<int>(inputs.size()));
}

void CanonicalReduce(DType dtype, ReduceOp op, const std::vector<const void*>& inputs, void* out, size_t count) {
  const size_t bytes = count * DTypeSize(dtype), n = inputs.size();
  if (n == 0 || bytes == 0) return;
  if (n == 1) {
    std::memcpy(out, inputs[0], bytes);
    return;
  }
  ReduceFn fn = LookupReduce(dtype, op, MemKind::kHost);
  for (size_t k = 1; k < n; ++k)
    fn(out, k == 1 ? inputs[0] : out, inputs[k], count, k == n - 1 && op == ReduceOp::kAvg ? static_cast<int>(n) : 0);
}

void FillOrderSensitive(DType dtype, void* buf, size_t count, uint64_t seed) {
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 11;
  const int span = dtype == DType::kF16                      ? 8
                   : dtype == DType::kBF16                   ? 20
                   : IsFloat(dtype) && DTypeSize(dtype) == 1 ? 3
                                                             : 24;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t r = SplitMix(s);
    if (dtype == DType::kBool) {
      static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(r & 1);
      continue;
    }
    if (!IsFloat(dtype)) {
      std::memcpy(static_cast<char*>(buf) + i * DTypeSize(dtype), &r, DTypeSize(dtype));
      continue;
    }
    const double mant = 1.0 + static_cast<double>(r >> 11 & 0xfffff) / double(1 << 20);
    const int e = static_cast<int>((r >> 40) % static_cast<uint64_t>(2 * span + 1)) - span;
    StoreFromDouble(dtype, buf, i, (r & 1 ? -1.0 : 1.0) * std::ldexp(mant, e));
  }
}

size_t CountMismatches(DType dtype, const void* got, const void* want, size_t count) {
  // Integers are equal exactly when their bits are: one memcmp settles the usual case. Floats
  // compare by value (so +0 and -0 are equal, and a NaN never is).
  if (!IsFloat(dtype)) {
    if (std::memcmp(got, want, count * DTypeSize(dtype)) == 0) return 0;
    size_t bad = 0;
    const size_t w = DTypeSize(dtype);
    for (size_t i = 0; i < count; ++i)
      bad += std::memcmp(static_cast<const char*>(got) + i * w, static_cast<const char*>(want) + i * w, w) != 0;
    return bad;
  }
  size_t bad = 0;
  if (dtype == DType::kF32) {
    for (size_t i = 0; i < count; ++i) bad += static_cast<const float*>(got)[i] != static_cast<const float*>(want)[i];
    return bad;
  }
  for (size_t i = 0; i < count; ++i) bad += LoadAsDouble(dtype, got, i) != LoadAsDouble(dtype, want, i);
  return bad;
}

void FillMixed(DType dtype, void* buf, size_t count, uint64_t seed) {
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 3;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t r = SplitMix(s);
    const double mant = 1.0 + static_cast<double>(r >> 11 & 0xfffff) / double(1 << 20);
    const int e = static_cast<int>((r >> 40) % 49) - 24;
    const double v = (r & 1 ? -1.0 : 1.0) * std::ldexp(mant, e);
    if (dtype == DType::kF64)
      static_cast<double*>(buf)[i] = v;
    else
      static_cast<float*>(buf)[i] = static_cast<float>(v);
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
