// hoop-perf fusion: what the tensor fusion runtime buys. T tensors of B bytes each (f32 sum),
// measured three ways in the same run, interleaved per repetition so drift hits all alike:
//   fused    the T tensors submitted by name to a tensor fusion runtime and awaited
//            (steady state: the runtime has seen the names before, so one small allreduce per
//            cycle negotiates; warm-up rounds fill its response cache)
//   single   one allreduce of T x B bytes: what fused should approach
//   unfused  T separate allreduces of B bytes, each awaited: what fusion saves
// plus the negotiation cost: the mean time of one cycle's readiness exchange over idle cycles
// with every name cached (and, separately, during the timed rounds, where it includes waiting
// for the slowest rank), and how many cycles after warm-up needed rank 0's coordinator (0).
// Times are per round, the slowest rank's mean, the median over repetitions.
#pragma once

namespace hoop::perf {

int RunFusionBench(int argc, char** argv);

}  // namespace hoop::perf
