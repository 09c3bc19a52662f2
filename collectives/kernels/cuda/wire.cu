// kernels/device_wire.h: the wire codec on the device, element for element the host's
// (kernels/wire_impl.h): the same operations in the same types (f64 data goes through f32 on its
// way to 16 bits, as on the host), so the same bits. Scales are powers of two: exact.
//
// absmax: each thread keeps the largest finite magnitude's bits it sees, a warp combines them by
// shuffles, and one lane per warp takes the maximum into the output word (atomicMax on the bits:
// for non-negative values the bits order as the values do; inf and NaN count as 0).
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <type_traits>

#include "collectives/kernels/cuda/codecs.cuh"
#include "collectives/kernels/device_wire.h"

namespace hoop {
namespace {

constexpr unsigned kThreads = 256;

unsigned Blocks(size_t n) {
  return static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>((n + kThreads - 1) / kThreads, 8192)));
}

Status Launched(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return Status::Ok();
  return Internal(std::string("launching the wire codec's ") + what + " kernel: " + cudaGetErrorString(e) + " (error " +
                  std::to_string(static_cast<int>(e)) + ")");
}

template <class T>
using Bits = std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>;

template <class T>
__device__ Bits<T> MagnitudeBits(T v) {
  Bits<T> b;
  if constexpr (sizeof(T) == 4)
    b = __float_as_uint(v) & 0x7fffffffu;
  else
    b = static_cast<unsigned long long>(__double_as_longlong(v)) & 0x7fffffffffffffffull;
  constexpr Bits<T> kInf = sizeof(T) == 4 ? Bits<T>(0x7f800000u) : Bits<T>(0x7ff0000000000000ull);
  return b < kInf ? b : 0;
}

template <class T>
__global__ void __launch_bounds__(kThreads) AbsMax(const T* x, const T* add, size_t n, unsigned long long* out) {
  Bits<T> m = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const Bits<T> b = MagnitudeBits<T>(add ? x[i] + add[i] : x[i]);
    m = b > m ? b : m;
  }
  for (int d = 16; d > 0; d /= 2) {
    const Bits<T> o = __shfl_down_sync(0xffffffffu, m, d);
    m = o > m ? o : m;
  }
  if ((threadIdx.x & 31) == 0 && m != 0) atomicMax(out, static_cast<unsigned long long>(m));
}

template <class T>
Status AbsMaxLaunch(const void* x, const void* add, size_t n, uint64_t* bits_out, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (cudaMemsetAsync(bits_out, 0, sizeof(uint64_t), s) != cudaSuccess) return Launched("absmax");
  if (n == 0) return Status::Ok();
  AbsMax<T><<<Blocks(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<const T*>(add), n,
                                           reinterpret_cast<unsigned long long*>(bits_out));
  return Launched("absmax");
}

template <class T, class W>
__global__ void __launch_bounds__(kThreads)
    Encode(uint16_t* w, T* rnd, const T* x, const T* add, T* res, size_t n, T s, T iv, T m) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    T v = x[i];
    if (add) v = v + add[i];
    const uint16_t q = W::Store(static_cast<float>(v * s));
    w[i] = q;
    if (res || rnd) {
      const T r = static_cast<T>(W::Load(q)) * iv;
      if (res) {
        const T d = v - r;
        res[i] = d == d ? d * m : T(0);
      }
      if (rnd) rnd[i] = r;
    }
  }
}

template <class T, class W>
Status EncodeLaunch(uint16_t* w, void* round_out, const void* x, const void* res_add, void* res_out, size_t n,
                    double scale, double inv, double res_mult, void* stream) {
  if (n == 0) return Status::Ok();
  Encode<T, W><<<Blocks(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      w, static_cast<T*>(round_out), static_cast<const T*>(x), static_cast<const T*>(res_add), static_cast<T*>(res_out),
      n, static_cast<T>(scale), static_cast<T>(inv), static_cast<T>(res_mult));
  return Launched("encode");
}

template <class T, class W>
__global__ void __launch_bounds__(kThreads)
    DecodeAdd(T* out, const T* src, const T* add, const uint16_t* w, size_t n, T iv, int divisor) {
  const T dv = static_cast<T>(divisor);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    T v = src[i];
    if (add) v = v + add[i];
    v = v + static_cast<T>(W::Load(w[i])) * iv;
    if (divisor > 1) v = v / dv;
    out[i] = v;
  }
}

template <class T, class W>
Status DecodeAddLaunch(void* out, const void* src, const void* res_add, const uint16_t* w, size_t n, double inv,
                       int divisor, void* stream) {
  if (n == 0) return Status::Ok();
  DecodeAdd<T, W><<<Blocks(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<T*>(out), static_cast<const T*>(src), static_cast<const T*>(res_add), w, n, static_cast<T>(inv),
      divisor);
  return Launched("decode_add");
}

template <class T, class W>
__global__ void __launch_bounds__(kThreads) Decode(T* out, const uint16_t* w, size_t n, T iv) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    out[i] = static_cast<T>(W::Load(w[i])) * iv;
}

template <class T, class W>
Status DecodeLaunch(void* out, const uint16_t* w, size_t n, double inv, void* stream) {
  if (n == 0) return Status::Ok();
  Decode<T, W>
      <<<Blocks(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<T*>(out), w, n, static_cast<T>(inv));
  return Launched("decode");
}

template <class T, class W>
constexpr DeviceWireKernels kDeviceWire{&AbsMaxLaunch<T>, &EncodeLaunch<T, W>, &DecodeAddLaunch<T, W>,
                                        &DecodeLaunch<T, W>};

}  // namespace

const DeviceWireKernels* LookupDeviceWire(DType data, Compression c) {
  if (c != Compression::kFp16 && c != Compression::kBf16) return nullptr;
  const bool half = c == Compression::kFp16;
  if (data == DType::kF32) return half ? &kDeviceWire<float, cuda::Half> : &kDeviceWire<float, cuda::BFloat>;
  if (data == DType::kF64) return half ? &kDeviceWire<double, cuda::Half> : &kDeviceWire<double, cuda::BFloat>;
  return nullptr;
}

}  // namespace hoop
