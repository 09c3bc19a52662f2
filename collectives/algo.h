// Algorithm choice. Every rank must choose the same algorithm for the same call; the choice
// depends only on inputs all ranks share (size, rank count, the call's options, HOOP_ALGO).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "collectives/op_desc.h"

namespace hoop {

enum class Algo : uint8_t { kAuto = 0, kRing, kTree, kChain, kBinomial, kDissemination, kDoubling };
const char* AlgoName(Algo a);
std::optional<Algo> ParseAlgo(const std::string& name);

// Resolves kAuto (and a process-wide default from HOOP_ALGO that does not apply to this
// collective) into a concrete algorithm; an explicit per-call choice that does not apply is an
// error the caller reports.
struct AlgoChoice {
  Algo algo = Algo::kAuto;
  std::string error;  // non-empty: the requested algorithm cannot run this collective
};
AlgoChoice ChooseAlgo(CollKind kind, size_t bytes, int nranks, Algo per_call, Algo env_default);

}  // namespace hoop
