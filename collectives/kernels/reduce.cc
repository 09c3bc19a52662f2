// Dispatch to the kernels of the widest instruction set this CPU runs (reduce_impl.h, compiled
// per instruction set), the streaming wrapper, the deterministic fold, and the single-rank
// average's division.
#include "collectives/kernels/reduce.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/config.h"
#include "common/logging.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace hoop {
namespace kernels {
namespace generic {
ReduceFn Lookup(DType dtype, ReduceOp op);
void Divide(DType dtype, void* dst, size_t n, int divisor);
}  // namespace generic
#ifdef HOOP_HAVE_AVX2_KERNELS
namespace avx2 {
ReduceFn Lookup(DType dtype, ReduceOp op);
ReduceFn LookupStream(DType dtype, ReduceOp op);
}  // namespace avx2
#endif
#ifdef HOOP_HAVE_AVX512_KERNELS
namespace avx512 {
ReduceFn Lookup(DType dtype, ReduceOp op);
ReduceFn LookupStream(DType dtype, ReduceOp op);
}  // namespace avx512
#endif
}  // namespace kernels

namespace {

#if defined(__x86_64__) || defined(__i386__)
// F16C from CPUID itself: clang's __builtin_cpu_supports does not know the name.
bool HasF16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

bool CpuRuns(KernelIsa isa) {
#if defined(__x86_64__) || defined(__i386__)
  switch (isa) {
    case KernelIsa::kGeneric: return true;
    case KernelIsa::kAvx2: return __builtin_cpu_supports("avx2") && HasF16c();
    case KernelIsa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && HasF16c();
  }
  return false;
#else
  return isa == KernelIsa::kGeneric;
#endif
}

// The kernel of an instruction set known to run here.
ReduceFn LookupIn(KernelIsa isa, DType dtype, ReduceOp op) {
  switch (isa) {
    case KernelIsa::kGeneric: return kernels::generic::Lookup(dtype, op);
#ifdef HOOP_HAVE_AVX2_KERNELS
    case KernelIsa::kAvx2: return kernels::avx2::Lookup(dtype, op);
#endif
#ifdef HOOP_HAVE_AVX512_KERNELS
    case KernelIsa::kAvx512: return kernels::avx512::Lookup(dtype, op);
#endif
    default: return nullptr;
  }
}

ReduceFn LookupStreamIn(KernelIsa isa, DType dtype, ReduceOp op) {
  switch (isa) {
#ifdef HOOP_HAVE_AVX2_KERNELS
    case KernelIsa::kAvx2: return kernels::avx2::LookupStream(dtype, op);
#endif
#ifdef HOOP_HAVE_AVX512_KERNELS
    case KernelIsa::kAvx512: return kernels::avx512::LookupStream(dtype, op);
#endif
    default: return nullptr;
  }
}

}  // namespace

const char* KernelIsaName(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kGeneric: return "generic";
    case KernelIsa::kAvx2: return "avx2";
    case KernelIsa::kAvx512: return "avx512";
  }
  return "?";
}

ReduceFn LookupReduceIsa(KernelIsa isa, DType dtype, ReduceOp op) {
  return CpuRuns(isa) ? LookupIn(isa, dtype, op) : nullptr;
}

KernelIsa BestKernelIsa() {
  static const KernelIsa best = [] {
    // HOOP_KERNEL_ISA (common/config.h) forces an instruction set this CPU runs, so a suite on
    // one CPU also covers the code another would choose.
    const std::string& forced = ProcessKernelIsa();
    for (KernelIsa isa : {KernelIsa::kAvx512, KernelIsa::kAvx2, KernelIsa::kGeneric}) {
      if (forced != "auto" && forced != KernelIsaName(isa)) continue;
      if (LookupReduceIsa(isa, DType::kF32, ReduceOp::kSum)) return isa;
      if (forced != "auto")
        HOOP_LOG(kError, "HOOP_KERNEL_ISA=" << forced << ": this build or CPU does not run those kernels; "
                                            << "using the widest it does");
    }
    for (KernelIsa isa : {KernelIsa::kAvx512, KernelIsa::kAvx2})
      if (LookupReduceIsa(isa, DType::kF32, ReduceOp::kSum)) return isa;
    return KernelIsa::kGeneric;
  }();
  return best;
}

ReduceFn LookupReduce(DType dtype, ReduceOp op, MemKind kind) {
  if (!HostVisible(kind)) return nullptr;
  return LookupIn(BestKernelIsa(), dtype, op);  // chosen once, so no CPU checks per call
}

ReduceFn LookupStreamIsa(KernelIsa isa, DType dtype, ReduceOp op) {
  return CpuRuns(isa) ? LookupStreamIn(isa, dtype, op) : nullptr;
}

ReduceFn LookupReduceStreaming(DType dtype, ReduceOp op, MemKind kind) {
  if (!HostVisible(kind)) return nullptr;
  return LookupStreamIn(BestKernelIsa(), dtype, op);
}

void Fold(ReduceFn fn, size_t esize, void* dst, const void* const* srcs, int n, size_t count, int divisor,
          bool stream) {
  constexpr size_t kBlock = 8192;
  alignas(64) char acc[kBlock];
  const size_t per = kBlock / esize;
  auto* d = static_cast<char*>(dst);
  for (size_t i = 0; i < count; i += per) {
    const size_t m = std::min(per, count - i), at = i * esize;
    const auto src = [&](int k) { return static_cast<const char*>(srcs[k]) + at; };
    for (int k = 1; k < n; ++k) fn(acc, k == 1 ? src(0) : acc, src(k), m, k == n - 1 ? divisor : 0);
    if (stream)
      CopyStreaming(d + at, acc, m * esize);
    else
      std::memcpy(d + at, acc, m * esize);
  }
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
  if (divisor > 1) kernels::generic::Divide(dtype, dst, n, divisor);  // not hot: one rank only
}

}  // namespace hoop
