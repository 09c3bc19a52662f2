// Wire compression's shared parts (wire.h): names, the bound's factor, the per-chunk scale, and
// dispatch to the codec kernels of the instruction set the reduction kernels use.
#include "collectives/kernels/wire.h"
#include "collectives/kernels/device_wire.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hoop {
namespace kernels {
namespace generic {
const WireKernels* LookupWire(DType data, Compression c);
}
#ifdef HOOP_HAVE_AVX2_KERNELS
namespace avx2 {
const WireKernels* LookupWire(DType data, Compression c);
}
#endif
#ifdef HOOP_HAVE_AVX512_KERNELS
namespace avx512 {
const WireKernels* LookupWire(DType data, Compression c);
}
#endif
}  // namespace kernels

const char* CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone: return "none";
    case Compression::kFp16: return "fp16";
    case Compression::kBf16: return "bf16";
    case Compression::kAuto: return "auto";
  }
  return "?";
}

std::optional<Compression> ParseCompression(const std::string& name) {
  for (Compression c : {Compression::kNone, Compression::kFp16, Compression::kBf16, Compression::kAuto})
    if (name == CompressionName(c)) return c;
  return std::nullopt;
}

bool Compressible(DType dtype, ReduceOp op) {
  return (dtype == DType::kF32 || dtype == DType::kF64) && (op == ReduceOp::kSum || op == ReduceOp::kAvg);
}

double CompressionUnitRoundoff(Compression c) {
  if (c == Compression::kFp16) return std::ldexp(1.0, -11);
  if (c == Compression::kBf16) return std::ldexp(1.0, -8);
  return 0;
}

double CompressionErrorFactor(Compression c, int nranks) {
  const double u = CompressionUnitRoundoff(c);
  if (u == 0 || nranks <= 1) return 0;
  const double nu = nranks * (u + std::ldexp(1.0, -23));
  return nu < 1 ? nu / (1 - nu) : INFINITY;
}

int WireScaleExponent(double absmax, DType data) {
  if (!(absmax > 0) || !std::isfinite(absmax)) return 0;
  int e = 0;
  std::frexp(absmax, &e);  // absmax = m * 2^e, m in [0.5, 1): absmax * 2^(15-e) in [2^14, 2^15)
  const int limit = data == DType::kF32 ? 126 : 1000;
  return std::clamp(15 - e, -limit, limit);
}

const WireKernels* LookupWireIsa(KernelIsa isa, DType data, Compression c) {
  if (!LookupReduceIsa(isa, DType::kF32, ReduceOp::kSum)) return nullptr;  // not built, or not this CPU
  switch (isa) {
    case KernelIsa::kGeneric: return kernels::generic::LookupWire(data, c);
#ifdef HOOP_HAVE_AVX2_KERNELS
    case KernelIsa::kAvx2: return kernels::avx2::LookupWire(data, c);
#endif
#ifdef HOOP_HAVE_AVX512_KERNELS
    case KernelIsa::kAvx512: return kernels::avx512::LookupWire(data, c);
#endif
    default: return nullptr;
  }
}

const WireKernels* LookupWire(DType data, Compression c) { return LookupWireIsa(BestKernelIsa(), data, c); }

double AbsMaxFromBits(DType data, uint64_t bits) {
  if (data == DType::kF32) {
    const uint32_t b = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

}  // namespace hoop
