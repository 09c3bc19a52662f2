// The wire codec kernels (wire.h), compiled once per instruction set next to the reduction
// kernels whose vector helpers they use (included after reduce_impl.h by reduce_generic.cc,
// reduce_avx2.cc and reduce_avx512.cc). f32 data is converted 8 or 16 values at a time; f64
// data, rare on the wire, goes one value at a time through f32. Every scale is a power of two,
// so scaling is exact and every instruction set gives the same bits.
#pragma once

#include <cstring>
#include <type_traits>

#include "collectives/kernels/wire.h"

#ifndef HOOP_KERNEL_NS
#error "define HOOP_KERNEL_NS before including wire_impl.h"
#endif

namespace hoop::kernels::HOOP_KERNEL_NS {
namespace {

// Largest finite magnitude, on the bits: |v|'s bits order as |v| does, and inf/NaN are at the top.
template <class T>
double AbsMaxT(const void* xv, const void* addv, size_t n) {
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  constexpr U kAbs = ~U(0) >> 1;
  constexpr U kInf = sizeof(T) == 4 ? U(0x7f800000u) : U(0x7ff0000000000000ull);
  const T* x = static_cast<const T*>(xv);
  const T* add = static_cast<const T*>(addv);
  U m = 0;
  auto take = [&](T v) {
    U b;
    std::memcpy(&b, &v, sizeof b);
    b &= kAbs;
    b = b < kInf ? b : 0;
    m = b > m ? b : m;
  };
  if (add) {
    for (size_t i = 0; i < n; ++i) take(x[i] + add[i]);
  } else {
    for (size_t i = 0; i < n; ++i) take(x[i]);
  }
  T r;
  std::memcpy(&r, &m, sizeof r);
  return static_cast<double>(r);
}

#ifdef HOOP_VEC16
template <class W>
inline VecF Load16(const uint16_t* p) {
  if constexpr (std::is_same_v<W, Half>)
    return LoadHalf(p);
  else
    return LoadBF16(p);
}
template <class W>
inline void Store16(uint16_t* p, VecF v) {
  if constexpr (std::is_same_v<W, Half>)
    StoreHalf(p, v);
  else
    StoreBF16(p, v);
}
#endif

template <class T, class W, bool kAdd, bool kRes, bool kRound>
void EncodeT(uint16_t* w, void* round_out, const void* xv, const void* addv, void* resv, size_t n, double scale,
             double inv, double mult) {
  const T* x = static_cast<const T*>(xv);
  const T* add = static_cast<const T*>(addv);
  T* res = static_cast<T*>(resv);
  T* rnd = static_cast<T*>(round_out);
  const T s = static_cast<T>(scale), iv = static_cast<T>(inv), m = static_cast<T>(mult);
  size_t i = 0;
#ifdef HOOP_VEC16
  if constexpr (std::is_same_v<T, float>) {
    const VecF vs = Splat(s), vi = Splat(iv), vm = Splat(m);
    for (; i + kLanes <= n; i += kLanes) {
      VecF v = LoadF(x + i);
      if constexpr (kAdd) v = Add(v, LoadF(add + i));
      Store16<W>(w + i, Mul(v, vs));
      if constexpr (kRes || kRound) {
        VecF r = Mul(Load16<W>(w + i), vi);
        if constexpr (kRes) StoreF(res + i, Mul(ZeroNaN(Sub(v, r)), vm));
        if constexpr (kRound) StoreF(rnd + i, r);
      }
    }
  }
#endif
  for (; i < n; ++i) {
    T v = x[i];
    if constexpr (kAdd) v = v + add[i];
    const uint16_t q = W::Store(static_cast<float>(v * s));
    w[i] = q;
    if constexpr (kRes || kRound) {
      const T r = static_cast<T>(W::Load(q)) * iv;
      if constexpr (kRes) {
        const T d = v - r;
        res[i] = d == d ? d * m : T(0);
      }
      if constexpr (kRound) rnd[i] = r;
    }
  }
}

template <class T, class W>
void Encode(uint16_t* w, void* round_out, const void* x, const void* add, void* res, size_t n, double scale, double inv,
            double mult) {
  const int k = (add ? 4 : 0) | (res ? 2 : 0) | (round_out ? 1 : 0);
  switch (k) {
    case 0: return EncodeT<T, W, false, false, false>(w, round_out, x, add, res, n, scale, inv, mult);
    case 1: return EncodeT<T, W, false, false, true>(w, round_out, x, add, res, n, scale, inv, mult);
    case 2: return EncodeT<T, W, false, true, false>(w, round_out, x, add, res, n, scale, inv, mult);
    case 3: return EncodeT<T, W, false, true, true>(w, round_out, x, add, res, n, scale, inv, mult);
    case 4: return EncodeT<T, W, true, false, false>(w, round_out, x, add, res, n, scale, inv, mult);
    case 5: return EncodeT<T, W, true, false, true>(w, round_out, x, add, res, n, scale, inv, mult);
    case 6: return EncodeT<T, W, true, true, false>(w, round_out, x, add, res, n, scale, inv, mult);
    default: return EncodeT<T, W, true, true, true>(w, round_out, x, add, res, n, scale, inv, mult);
  }
}

template <class T, class W>
void DecodeAdd(void* outv, const void* srcv, const void* addv, const uint16_t* w, size_t n, double inv, int divisor) {
  T* out = static_cast<T*>(outv);
  const T* src = static_cast<const T*>(srcv);
  const T* add = static_cast<const T*>(addv);
  const T iv = static_cast<T>(inv);
  const bool divide = divisor > 1;
  const T dv = static_cast<T>(divisor);
  size_t i = 0;
#ifdef HOOP_VEC16
  if constexpr (std::is_same_v<T, float>) {
    const VecF vi = Splat(iv);
    for (; i + kLanes <= n; i += kLanes) {
      VecF v = LoadF(src + i);
      if (add) v = Add(v, LoadF(add + i));
      v = Add(v, Mul(Load16<W>(w + i), vi));
      if (divide) v = Div(v, dv);
      StoreF(out + i, v);
    }
  }
#endif
  for (; i < n; ++i) {
    T v = src[i];
    if (add) v = v + add[i];
    v = v + static_cast<T>(W::Load(w[i])) * iv;
    if (divide) v = v / dv;
    out[i] = v;
  }
}

template <class T, class W>
void Decode(void* outv, const uint16_t* w, size_t n, double inv) {
  T* out = static_cast<T*>(outv);
  const T iv = static_cast<T>(inv);
  size_t i = 0;
#ifdef HOOP_VEC16
  if constexpr (std::is_same_v<T, float>) {
    const VecF vi = Splat(iv);
    for (; i + kLanes <= n; i += kLanes) StoreF(out + i, Mul(Load16<W>(w + i), vi));
  }
#endif
  for (; i < n; ++i) out[i] = static_cast<T>(W::Load(w[i])) * iv;
}

template <class T, class W>
constexpr WireKernels kWire{&AbsMaxT<T>, &Encode<T, W>, &DecodeAdd<T, W>, &Decode<T, W>};

}  // namespace

const WireKernels* LookupWire(DType data, Compression c) {
  const bool half = c == Compression::kFp16;
  if (c != Compression::kFp16 && c != Compression::kBf16) return nullptr;
  if (data == DType::kF32) return half ? &kWire<float, Half> : &kWire<float, BFloat>;
  if (data == DType::kF64) return half ? &kWire<double, Half> : &kWire<double, BFloat>;
  return nullptr;
}

}  // namespace hoop::kernels::HOOP_KERNEL_NS
