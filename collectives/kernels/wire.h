// Wire compression: f32 and f64 allreduce data travelling in 16 bits (fp16 or bf16).
//
// Every hop of the ring decodes what it receives, adds it to its own data in the tensor's type
// (f32 for f32, f64 for f64), and encodes the partial sum again; the rank that finishes a
// segment rounds its own copy to what it sends, so every rank ends with the same bits.
//
// Each message is one chunk: an 8-byte header holding a power-of-two scale, then the values
// times that scale, rounded to nearest even. The scale is chosen per chunk from the largest
// finite magnitude in it, which lands in [2^14, 2^15): fp16 (largest finite 65504) never turns a
// finite value into inf, and small chunks keep fp16's full precision instead of becoming
// subnormal. inf and NaN travel as themselves. This is the "scale per chunk" answer to fp16's
// range; nothing saturates.
//
// Error bound (tested in tests/multiproc/compression_test.cc against an f64 reference): with n
// ranks, element j of a compressed sum satisfies
//   |result_j - exact_j| <= g * (A_j + 2^-24 * M),   A_j = sum over ranks of |x_ij|,
//   g = n*u' / (1 - n*u'),  u' = u + 2^-23,  u = 2^-11 (fp16) or 2^-8 (bf16),
// M the largest A_j of the tensor (it covers values far smaller than the rest of their chunk).
// For avg both sides are divided by n. Each of the n roundings a value goes through (n-1 hops
// of the reduce-scatter and the final one) costs at most u' relatively, so the error grows with
// the rank count, as the classic bound for recursive summation does, and no worse.
//
// Error feedback (optional, off by default): the caller passes a residual array of the
// tensor's type and count, zero at first, and the same array on every call for that tensor.
// Each rank adds its residual to its input where it reads it and stores there the rounding
// error its own encodings made, so that the next call re-injects it: over many calls the
// errors do not accumulate (their sum telescopes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "collectives/kernels/reduce.h"

namespace hoop {

enum class Compression : uint8_t { kNone = 0, kFp16, kBf16, kAuto };
const char* CompressionName(Compression c);  // "none", "fp16", "bf16", "auto"
std::optional<Compression> ParseCompression(const std::string& name);

// Whether a call can travel compressed: f32 or f64 data, sum or avg.
bool Compressible(DType dtype, ReduceOp op);
// u of the bound above; g for n ranks.
double CompressionUnitRoundoff(Compression c);
double CompressionErrorFactor(Compression c, int nranks);

// Message layout: header, then one 16-bit value per element.
struct WireHeader {
  int32_t scale_exp = 0;  // the values are x * 2^scale_exp
  uint32_t count = 0;     // elements (low 32 bits), a sanity check
};
static_assert(sizeof(WireHeader) == 8);
inline size_t WireBytes(size_t count) { return sizeof(WireHeader) + 2 * count; }
// The scale exponent for a chunk whose largest finite magnitude is `absmax` (0 when there is
// none), clamped so that 2^e and 2^-e are normal numbers of the data type.
int WireScaleExponent(double absmax, DType data);

// The codec kernels of one (data type, wire format), over T = float or double. Scales are
// exact powers of two. Pointers of T may be null where the comment says so.
struct WireKernels {
  // Largest finite |x[i] + add[i]| (add may be null); 0 if none.
  double (*absmax)(const void* x, const void* add, size_t n);
  // v = x[i] + res_add[i]; w[i] = round(v * scale); r = w[i] / scale; res_out[i] = (v - r) *
  // res_mult (0 where v is not finite); round_out[i] = r. res_add, res_out, round_out may be null.
  void (*encode)(uint16_t* w, void* round_out, const void* x, const void* res_add, void* res_out, size_t n,
                 double scale, double inv, double res_mult);
  // out[i] = (src[i] + res_add[i] + w[i] * inv) / divisor (res_add may be null; divisor <= 1:
  // no division). out may alias src.
  void (*decode_add)(void* out, const void* src, const void* res_add, const uint16_t* w, size_t n, double inv,
                     int divisor);
  // out[i] = w[i] * inv.
  void (*decode)(void* out, const uint16_t* w, size_t n, double inv);
};

// The kernels for host memory, of BestKernelIsa(); nullptr if (data, c) is not a codec.
const WireKernels* LookupWire(DType data, Compression c);
// One instruction set's, for tests and benchmarks (nullptr where LookupReduceIsa gives none).
const WireKernels* LookupWireIsa(KernelIsa isa, DType data, Compression c);

}  // namespace hoop
