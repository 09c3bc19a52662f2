// hoop-perf recorder: the flight recorder's cost (collectives/core/flight_recorder.h), measured
// side by side. The job makes two communicators of its ranks, alike but for HOOP_TRACE_OPS (N on
// one, 0 on the other), and times blocks of the same blocking allreduce on each in turn, the
// order swapped every block. The figure is the median of the pairs' ratios: a machine whose
// speed drifts from block to block (2 ranks sharing 2 cores do, by 30%) drifts alike for both
// halves of a pair.
#pragma once

namespace hoop::perf {

int RunRecorderBench(int argc, char** argv);

}  // namespace hoop::perf
