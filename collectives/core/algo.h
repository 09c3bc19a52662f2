// Algorithm choice. Every rank must choose the same algorithm for the same call; the choice
// depends only on inputs all ranks share (size, rank count, the call's options, HOOP_ALGO).
//
// The algorithms are one table (algo_table.cc): each row is {collective, algorithm, schedule
// builder, the sizes auto picks it for}. Choosing an algorithm and building its schedule both
// read the table, so adding an algorithm is a schedule file (schedules/) and a row.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "collectives/core/op_desc.h"
#include "collectives/schedules/schedule.h"

namespace hoop {

// The values travel in 4 bits of a message's operation word (op_desc.h): at most 15.
enum class Algo : uint8_t {
  kAuto = 0,
  kRing,
  kTree,
  kChain,
  kBinomial,
  kDissemination,
  kDoubling,
  kFlat,
  kPairwise,
  kHierarchical,
  kFold,              // deterministic: each block folded in rank order by its owner (schedules/fold.cc)
  kFoldAll,           // deterministic: every rank folds every element
  kFoldRoot,          // deterministic: the root (allreduce: rank 0) folds every element (and sends it back)
  kLast = kFoldRoot,  // AlgoNames and ParseAlgo run up to it
};
const char* AlgoName(Algo a);
std::optional<Algo> ParseAlgo(const std::string& name);
// Every algorithm's name, kAuto's first ("auto", "ring", ...).
std::vector<std::string> AlgoNames();

// What a schedule depends on besides the rank count: the call's shape.
struct ScheduleArgs {
  int rank = 0;
  int size = 1;
  int root = -1;                              // rooted collectives
  size_t count = 0;                           // the collective's own count (DescCount, coll_table.h)
  const VBlocks* v = nullptr;                 // the v-collectives' per-rank layouts
  const std::vector<int>* host_of = nullptr;  // each rank's host (an id per distinct host name)
};
using ScheduleBuilder = Schedule (*)(const ScheduleArgs& a);

struct AlgoRow {
  CollKind kind;
  Algo algo;
  ScheduleBuilder build;
  // Auto picks the first row of the call's collective whose range holds the call's bytes
  // (min > max: only when asked for by name).
  size_t auto_min_bytes;
  size_t auto_max_bytes;
  // Auto picks it only for a job on 2 or more hosts with the same number (2 or more) of ranks on
  // each (the hierarchical schedules).
  bool needs_even_hosts = false;
  // It folds every element in the canonical order (schedules/fold.cc): a deterministic call
  // runs only such rows, and auto picks them only for such calls.
  bool canonical = false;
  // Auto picks it only for at least this many ranks.
  int auto_min_ranks = 0;
};
const std::vector<AlgoRow>& AlgoTable();
// The row of `algo` for `kind`, or null where that algorithm does not run that collective.
const AlgoRow* FindAlgo(CollKind kind, Algo algo);

// Resolves kAuto (and a process-wide default from HOOP_ALGO that does not apply to this
// collective) into a concrete algorithm; an explicit per-call choice that does not apply is an
// error the caller reports.
struct AlgoChoice {
  Algo algo = Algo::kAuto;
  std::string error;  // non-empty: the requested algorithm cannot run this collective
};
// even_hosts: the job spans 2 or more hosts with the same number (2 or more) of ranks on each.
// deterministic: a collective that reduces runs a canonical row whatever algorithm is named (the
// name still chooses among canonical rows); the others choose as ever.
AlgoChoice ChooseAlgo(CollKind kind, size_t bytes, int nranks, Algo per_call, Algo env_default, bool even_hosts = false,
                      bool deterministic = false);
// Whether host ids (one per rank) make such a job.
bool EvenHosts(const std::vector<int>& host_of);
// Ranks on each host id (host_of[rank]; ids below 0 are left out).
std::vector<int> RanksPerHost(const std::vector<int>& host_of);

}  // namespace hoop
