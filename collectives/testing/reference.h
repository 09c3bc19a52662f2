// Reference data and results for checking collectives (the tests and `hoop-perf -c 1`).
//
// FillInput makes rank-specific random data whose reductions are exact in every dtype: small
// integers for sum and avg, +-1 and +-2 for prod (so products of up to 8 ranks stay exact even in
// bf16), wider ranges for min and max. With exact data the expected result does not depend on
// the order in which a schedule combines ranks, so results are compared bit for bit.
// (Rounding behaviour of f16/bf16 reductions on arbitrary data is tested on the kernels.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/kernels/wire.h"
#include "common/dtype.h"

namespace hoop {

void FillInput(DType dtype, ReduceOp op, void* buf, size_t count, uint64_t seed);
// Elements [first, first + len) of what FillInput(dtype, op, ..., total, seed) makes, into buf[0..len):
// a rank's block of every rank's input, without making the rest.
void FillInputSlice(DType dtype, ReduceOp op, void* buf, size_t total, size_t first, size_t len, uint64_t seed);
// out = reduce(inputs) elementwise, in order, with the average's division at the end.
void ReferenceReduce(DType dtype, ReduceOp op, const std::vector<const void*>& inputs, void* out, size_t count);
// The deterministic mode's canonical result (schedules/fold.cc): the left fold over the inputs in
// order with the host kernel of (dtype, op), each step rounded to the dtype, the last step
// dividing by the input count for avg (as the kernel does it: in f32, f64 for f64, then one
// rounding). Compare it with memcmp: every bit must agree.
void CanonicalReduce(DType dtype, ReduceOp op, const std::vector<const void*>& inputs, void* out, size_t count);
// Data whose sums and products depend on their order: sign x [1, 2) x 2^e, e spread over as much
// of the dtype's range as a sum of 8 stays finite in (f32/f64: -24..24, bf16: -20..20, f16: -8..8,
// the fp8s: -3..3); integers of every magnitude (their sums wrap the same in any order).
void FillOrderSensitive(DType dtype, void* buf, size_t count, uint64_t seed);
// Number of elements that differ (compared as values; -0 == +0).
size_t CountMismatches(DType dtype, const void* got, const void* want, size_t count);

// For compressed allreduces (kernels/wire.h), whose results are not exact: f32 or f64 values of
// mixed magnitude, sign * [1, 2) * 2^e with e uniform in [-24, 24], so that chunks mix values
// far apart and exceed fp16's range.
void FillMixed(DType dtype, void* buf, size_t count, uint64_t seed);
// A compressed sum or avg allreduce's result against the exact one (in f64 from every rank's
// input) and the bound wire.h states: how many elements fall outside, and the largest
// |error| / bound. A non-finite exact value must come out as the same inf, or NaN.
struct BoundCheck {
  size_t outside = 0;
  double worst = 0;
};
BoundCheck CheckCompressedBound(DType dtype, ReduceOp op, Compression c, const std::vector<const void*>& inputs,
                                const void* got, size_t count);

}  // namespace hoop
