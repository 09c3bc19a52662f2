#include "collectives/algo.h"

namespace hoop {

const char* AlgoName(Algo a) {
  switch (a) {
    case Algo::kAuto: return "auto";
    case Algo::kRing: return "ring";
    case Algo::kTree: return "tree";
    case Algo::kChain: return "chain";
    case Algo::kBinomial: return "binomial";
    case Algo::kDissemination: return "dissemination";
    case Algo::kDoubling: return "doubling";
  }
  return "?";
}

std::optional<Algo> ParseAlgo(const std::string& name) {
  for (Algo a : {Algo::kAuto, Algo::kRing, Algo::kTree, Algo::kDoubling, Algo::kChain, Algo::kBinomial,
                 Algo::kDissemination})
    if (name == AlgoName(a)) return a;
  return std::nullopt;
}

namespace {
bool Applies(CollKind kind, Algo a) {
  switch (kind) {
    case CollKind::kAllreduce: return a == Algo::kRing || a == Algo::kTree || a == Algo::kDoubling;
    case CollKind::kBroadcast: return a == Algo::kChain || a == Algo::kBinomial;
    case CollKind::kAllgather:
    case CollKind::kReduceScatter: return a == Algo::kRing;
    case CollKind::kBarrier: return a == Algo::kDissemination;
  }
  return false;
}
// Thresholds measured over shm and TCP (docs/PERF.md): below them, fewer hops beat fewer bytes.
// Recursive doubling beat both the tree and the ring up to 32 KiB for 2 to 8 ranks, and lost to
// the ring from 512 KiB (it moves log2(n) whole buffers per rank).
constexpr size_t kDoublingMaxBytes = 64 << 10;
constexpr size_t kBinomialMaxBytes = 64 << 10;
}  // namespace

AlgoChoice ChooseAlgo(CollKind kind, size_t bytes, int nranks, Algo per_call, Algo env_default) {
  if (per_call != Algo::kAuto) {
    if (!Applies(kind, per_call))
      return {Algo::kAuto, std::string("algorithm '") + AlgoName(per_call) + "' does not apply to " + CollKindName(kind)};
    return {per_call, ""};
  }
  if (env_default != Algo::kAuto && Applies(kind, env_default)) return {env_default, ""};
  switch (kind) {
    case CollKind::kAllreduce:
      (void)nranks;  // the same thresholds held for every rank count measured
      return {bytes <= kDoublingMaxBytes ? Algo::kDoubling : Algo::kRing, ""};
    case CollKind::kBroadcast:
      return {bytes <= kBinomialMaxBytes ? Algo::kBinomial : Algo::kChain, ""};
    case CollKind::kAllgather:
    case CollKind::kReduceScatter: return {Algo::kRing, ""};
    case CollKind::kBarrier: return {Algo::kDissemination, ""};
  }
  return {Algo::kRing, ""};
}

}  // namespace hoop
