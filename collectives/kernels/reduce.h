// Reduction kernels: dst[i] = a[i] op b[i] for every dtype x op, built from one template per
// element type rather than a macro maze. dst may alias a or b. f16 and bf16 are widened to f32,
// reduced, and rounded once. Integers wrap on overflow (sum and prod are done in the unsigned
// type of the same width). `divisor` > 1 makes the call the average's last step: the result is
// (a op b) / divisor, computed in f32 (f64 for f64; integer division for integers) before the
// single rounding. Bitwise and, or and xor exist for the integer types and bool alone
// (OpApplies); LookupReduce gives nullptr for the combinations that do not apply.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/dtype.h"
#include "common/stream_copy.h"
#include "common/status.h"

namespace hoop {

using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t n, int divisor);

// nullptr for combinations no kernel serves (device memory before the CUDA kernels land). Host
// kernels are those of BestKernelIsa().
ReduceFn LookupReduce(DType dtype, ReduceOp op, MemKind kind);

// The instruction sets the kernels are compiled for (reduce_impl.h); every one gives the same
// bits (NaN payloads aside).
enum class KernelIsa : uint8_t { kGeneric, kAvx2, kAvx512 };
const char* KernelIsaName(KernelIsa isa);
// The widest this build has and this CPU runs, chosen once; HOOP_KERNEL_ISA may name a narrower
// one (a test knob: CI runs the suite's kernels as other CPUs would choose them).
KernelIsa BestKernelIsa();
// One instruction set's kernel, for tests and benchmarks: nullptr if the build lacks it or this
// CPU cannot run it.
ReduceFn LookupReduceIsa(KernelIsa isa, DType dtype, ReduceOp op);

// The same reduction for outputs far larger than the caches: blocks are reduced into an L1
// buffer and written to dst with non-temporal stores, so dst's lines are not first read in
// (which a plain store does) and do not evict the inputs. Any aliasing fn allows is allowed.
void ReduceStreaming(ReduceFn fn, size_t esize, void* dst, const void* a, const void* b, size_t n, int divisor);
// Kernels that write whole vectors with non-temporal stores themselves, with no copy through
// L1 (f32, f16 and bf16 sum and avg, on AVX2 and AVX-512): the same bits as LookupReduce's.
// nullptr where there is none; ReduceStreaming serves those.
ReduceFn LookupReduceStreaming(DType dtype, ReduceOp op, MemKind kind);
ReduceFn LookupStreamIsa(KernelIsa isa, DType dtype, ReduceOp op);
// Outputs at least this large are worth streaming.
constexpr size_t kStreamingBytes = 8u << 20;

// The deterministic schedules' fold (schedules/fold.cc): dst[i] = ((srcs[0][i] op srcs[1][i])
// op srcs[2][i]) ... op srcs[n-1][i], n >= 2, each step by fn (so rounded to the dtype), the last
// dividing by `divisor` when > 1. It goes block by block through an L1 buffer: each source is read
// once and dst written once (with non-temporal stores when `stream`), and dst may alias any
// source (in place: a block is read whole before it is written).
void Fold(ReduceFn fn, size_t esize, void* dst, const void* const* srcs, int n, size_t count, int divisor, bool stream);

// dst[i] /= divisor, for the average when there is a single rank (no reduction happens).
void DivideInPlace(DType dtype, void* dst, size_t n, int divisor);

}  // namespace hoop
