// Algorithm names and the choice among the table's rows (algo_table.cc).
#include "collectives/core/algo.h"

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
    case Algo::kFlat: return "flat";
    case Algo::kPairwise: return "pairwise";
    case Algo::kHierarchical: return "hierarchical";
    case Algo::kFold: return "fold";
    case Algo::kFoldAll: return "fold_all";
    case Algo::kFoldRoot: return "fold_root";
  }
  return "?";
}

std::vector<std::string> AlgoNames() {
  std::vector<std::string> names;
  for (int a = 0; a <= static_cast<int>(Algo::kLast); ++a) names.push_back(AlgoName(static_cast<Algo>(a)));
  return names;
}

std::optional<Algo> ParseAlgo(const std::string& name) {
  for (int a = 0; a <= static_cast<int>(Algo::kLast); ++a)
    if (name == AlgoName(static_cast<Algo>(a))) return static_cast<Algo>(a);
  return std::nullopt;
}

const AlgoRow* FindAlgo(CollKind kind, Algo algo) {
  for (const AlgoRow& r : AlgoTable())
    if (r.kind == kind && r.algo == algo) return &r;
  return nullptr;
}

std::vector<int> RanksPerHost(const std::vector<int>& host_of) {
  std::vector<int> per_host;
  for (int h : host_of) {
    if (h < 0) continue;
    if (static_cast<size_t>(h) >= per_host.size()) per_host.resize(static_cast<size_t>(h) + 1, 0);
    ++per_host[static_cast<size_t>(h)];
  }
  return per_host;
}

bool EvenHosts(const std::vector<int>& host_of) {
  for (int h : host_of)
    if (h < 0) return false;
  const std::vector<int> per_host = RanksPerHost(host_of);
  size_t hosts = 0;
  for (int n : per_host)
    if (n > 0) {
      if (n != per_host[static_cast<size_t>(host_of[0])] || n < 2) return false;
      ++hosts;
    }
  return hosts >= 2;
}

namespace {
bool Canonical(CollKind kind, Algo a) {
  const AlgoRow* r = FindAlgo(kind, a);
  return r && r->canonical;
}
bool HasCanonical(CollKind kind) {
  for (const AlgoRow& r : AlgoTable())
    if (r.kind == kind && r.canonical) return true;
  return false;
}
}  // namespace

AlgoChoice ChooseAlgo(CollKind kind, size_t bytes, int nranks, Algo per_call, Algo env_default, bool even_hosts,
                      bool deterministic) {
  const bool canonical = deterministic && HasCanonical(kind);
  if (per_call != Algo::kAuto && !(canonical && !Canonical(kind, per_call))) {
    if (!FindAlgo(kind, per_call))
      return {Algo::kAuto,
              std::string("algorithm '") + AlgoName(per_call) + "' does not apply to " + CollKindName(kind)};
    return {per_call, ""};
  }
  if (env_default != Algo::kAuto && FindAlgo(kind, env_default) && (!canonical || Canonical(kind, env_default)))
    return {env_default, ""};
  for (const AlgoRow& r : AlgoTable())
    if (r.kind == kind && r.canonical == canonical && bytes >= r.auto_min_bytes && bytes <= r.auto_max_bytes &&
        (even_hosts || !r.needs_even_hosts) && nranks >= r.auto_min_ranks)
      return {r.algo, ""};
  return {Algo::kAuto,
          std::string("no algorithm runs ") + CollKindName(kind) + " of " + std::to_string(bytes) + " bytes"};
}

}  // namespace hoop
