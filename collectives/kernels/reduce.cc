#include "collectives/kernels/reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <type_traits>

namespace hoop {
namespace {

// How an element type is stored and computed.
template <class Storage>
struct Native {
  using Compute = std::conditional_t<std::is_same_v<Storage, float> || std::is_same_v<Storage, double>,
                                     Storage, Storage>;
  static Compute Load(Storage v) { return v; }
  static Storage Store(Compute v) { return v; }
};
struct Half {
  using Compute = float;
  static float Load(uint16_t v) { return HalfToFloat(v); }
  static uint16_t Store(float v) { return FloatToHalf(v); }
};
struct BFloat {
  using Compute = float;
  static float Load(uint16_t v) { return BF16ToFloat(v); }
  static uint16_t Store(float v) { return FloatToBF16(v); }
};

template <class T>
T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <class T>
T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    // Promote u8/u16 through unsigned int so the multiply itself cannot overflow a signed int.
    using P = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    return static_cast<T>(static_cast<U>(static_cast<P>(static_cast<U>(a)) * static_cast<P>(static_cast<U>(b))));
  } else {
    return a * b;
  }
}

template <ReduceOp Op, class C>
inline C Apply(C a, C b) {
  if constexpr (Op == ReduceOp::kSum || Op == ReduceOp::kAvg) return WrapAdd(a, b);
  if constexpr (Op == ReduceOp::kProd) return WrapMul(a, b);
  if constexpr (Op == ReduceOp::kMin) return std::min(a, b);
  if constexpr (Op == ReduceOp::kMax) return std::max(a, b);
}

template <class Storage, class Codec, ReduceOp Op>
void Kernel(void* dst, const void* a, const void* b, size_t n, int divisor) {
  auto* d = static_cast<Storage*>(dst);
  auto* x = static_cast<const Storage*>(a);
  auto* y = static_cast<const Storage*>(b);
  using C = typename Codec::Compute;
  if (Op == ReduceOp::kAvg && divisor > 1) {
    const C div = static_cast<C>(divisor);
    for (size_t i = 0; i < n; ++i) d[i] = Codec::Store(Apply<Op, C>(Codec::Load(x[i]), Codec::Load(y[i])) / div);
    return;
  }
  for (size_t i = 0; i < n; ++i) d[i] = Codec::Store(Apply<Op, C>(Codec::Load(x[i]), Codec::Load(y[i])));
}

template <class Storage, class Codec>
ReduceFn ForOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return &Kernel<Storage, Codec, ReduceOp::kSum>;
    case ReduceOp::kAvg: return &Kernel<Storage, Codec, ReduceOp::kAvg>;
    case ReduceOp::kMin: return &Kernel<Storage, Codec, ReduceOp::kMin>;
    case ReduceOp::kMax: return &Kernel<Storage, Codec, ReduceOp::kMax>;
    case ReduceOp::kProd: return &Kernel<Storage, Codec, ReduceOp::kProd>;
  }
  return nullptr;
}

template <class Storage, class Codec>
void Divide(void* dst, size_t n, int divisor) {
  auto* d = static_cast<Storage*>(dst);
  using C = typename Codec::Compute;
  for (size_t i = 0; i < n; ++i) d[i] = Codec::Store(Codec::Load(d[i]) / static_cast<C>(divisor));
}

}  // namespace

ReduceFn LookupReduce(DType dtype, ReduceOp op, MemKind kind) {
  if (kind != MemKind::kHost) return nullptr;
  switch (dtype) {
    case DType::kU8: return ForOp<uint8_t, Native<uint8_t>>(op);
    case DType::kI32: return ForOp<int32_t, Native<int32_t>>(op);
    case DType::kI64: return ForOp<int64_t, Native<int64_t>>(op);
    case DType::kF16: return ForOp<uint16_t, Half>(op);
    case DType::kBF16: return ForOp<uint16_t, BFloat>(op);
    case DType::kF32: return ForOp<float, Native<float>>(op);
    case DType::kF64: return ForOp<double, Native<double>>(op);
  }
  return nullptr;
}

void ReduceStreaming(ReduceFn fn, size_t esize, void* dst, const void* a, const void* b, size_t n, int divisor) {
#if defined(__SSE2__)
  constexpr size_t kBlock = 4096;
  alignas(64) char tmp[kBlock];
  auto* d = static_cast<char*>(dst);
  auto* x = static_cast<const char*>(a);
  auto* y = static_cast<const char*>(b);
  // Plain stores up to the first 16-byte boundary that is also an element boundary.
  size_t head = 0;
  while (head < n && (reinterpret_cast<uintptr_t>(d + head * esize) & 15) != 0) ++head;
  if (head == n || head * esize >= 16) {
    fn(dst, a, b, n, divisor);
    return;
  }
  fn(d, x, y, head, divisor);
  const size_t per = kBlock / esize;
  size_t i = head;
  for (; i + per <= n; i += per) {
    fn(tmp, x + i * esize, y + i * esize, per, divisor);
    auto* out = reinterpret_cast<__m128i*>(d + i * esize);
    const auto* in = reinterpret_cast<const __m128i*>(tmp);
    for (size_t k = 0; k < kBlock / 16; ++k) _mm_stream_si128(out + k, _mm_load_si128(in + k));
  }
  _mm_sfence();
  if (i < n) fn(d + i * esize, x + i * esize, y + i * esize, n - i, divisor);
#else
  (void)esize;
  fn(dst, a, b, n, divisor);
#endif
}

void DivideInPlace(DType dtype, void* dst, size_t n, int divisor) {
  if (divisor <= 1) return;
  switch (dtype) {
    case DType::kU8: return Divide<uint8_t, Native<uint8_t>>(dst, n, divisor);
    case DType::kI32: return Divide<int32_t, Native<int32_t>>(dst, n, divisor);
    case DType::kI64: return Divide<int64_t, Native<int64_t>>(dst, n, divisor);
    case DType::kF16: return Divide<uint16_t, Half>(dst, n, divisor);
    case DType::kBF16: return Divide<uint16_t, BFloat>(dst, n, divisor);
    case DType::kF32: return Divide<float, Native<float>>(dst, n, divisor);
    case DType::kF64: return Divide<double, Native<double>>(dst, n, divisor);
  }
}

}  // namespace hoop
