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
  }
  return "?";
}

std::optional<Algo> ParseAlgo(const std::string& name) {
  for (Algo a : {Algo::kAuto, Algo::kRing, Algo::kTree, Algo::kChain, Algo::kBinomial, Algo::kDissemination})
    if (name == AlgoName(a)) return a;
  return std::nullopt;
}

namespace {
bool Applies(CollKind kind, Algo a) {
  switch (kind) {
    case CollKind::kAllreduce: return a == Algo::kRing || a == Algo::kTree;
    case CollKind::kBroadcast: return a == Algo::kChain || a == Algo::kBinomial;
    case CollKind::kAllgather:
    case CollKind::kReduceScatter: return a == Algo::kRing;
    case CollKind::kBarrier: return a == Algo::kDissemination;
  }
  return false;
}
// Thresholds measured on loopback TCP (docs/PERF.md): below them, fewer hops beat fewer bytes.
constexpr size_t kTreeMaxBytes = 64 << 10;
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
      return {nranks > 2 && bytes <= kTreeMaxBytes ? Algo::kTree : Algo::kRing, ""};
    case CollKind::kBroadcast:
      return {bytes <= kBinomialMaxBytes ? Algo::kBinomial : Algo::kChain, ""};
    case CollKind::kAllgather:
    case CollKind::kReduceScatter: return {Algo::kRing, ""};
    case CollKind::kBarrier: return {Algo::kDissemination, ""};
  }
  return {Algo::kRing, ""};
}

}  // namespace hoop
