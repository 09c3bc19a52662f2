// hoop-perf's command line: nccl-tests' flags with nccl-tests' meanings (-b -e -i -f -n -w -m -c
// -d -o -r -a -z -T -g -t -p), plus hoop's own under long names (--algo, --transport,
// --place, --compression) and repetitions (-R), CSV and JSON. Parsing is pure: no job is joined.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectives/core/algo.h"
#include "collectives/core/op_desc.h"
#include "collectives/kernels/wire.h"
#include "common/dtype.h"
#include "common/status.h"
#include "perf/harness.h"  // AutoIters, AutoWarmup

namespace hoop::perf {

enum class Place : uint8_t { kOut, kIn, kBoth };

// -a: how the ranks' times for one size combine into the reported one (nccl-tests' values).
enum class Average : uint8_t { kRank0 = 0, kMean = 1, kMin = 2, kMax = 3 };
const char* AverageName(Average a);

struct PerfOptions {
  CollKind kind = CollKind::kAllreduce;
  uint64_t min_bytes = 8, max_bytes = 64 << 20;
  uint64_t factor = 2;      // -f: multiply each step
  uint64_t step_bytes = 0;  // -i: add each step instead (0: use -f)
  int iters = 0;            // 0: scaled by size (AutoIters, harness.h)
  int warmup = -1;          // -1: scaled by size (AutoWarmup)
  int agg = 1;              // -m: calls per timed iteration
  int repeats = 3;
  int rotate = 1;  // --rotate: calls go round this many sets of buffers (1: the same each call)
  bool check = true;
  bool blocking = true;  // -z 1: each call on the calling thread; 0: posted, waited per iteration
  Average average = Average::kMax;
  double timeout_s = 0;                       // -T; 0: HOOP_TIMEOUT's
  std::vector<DType> dtypes{DType::kF32};     // -d, or every one with -d all
  std::vector<ReduceOp> ops{ReduceOp::kSum};  // -o, or every one with -o all
  Algo algo = Algo::kAuto;
  Place place = Place::kBoth;
  int root = 0;
  std::string transport;                   // empty: HOOP_TRANSPORT, else per peer
  std::optional<Compression> compression;  // --compression; unset: HOOP_COMPRESSION's setting
  bool cuda = false;                       // --device cuda: every call on CUDA device buffers
  int cuda_device = -1;                    // the device this rank uses (set by hoop-perf once joined, not parsed)
  std::string json, csv;
  bool help = false, version = false;
  int cycles = 1;  // -N: the whole sweep this many times (nccl-tests' run_cycles)
  // nccl-tests' flags that hoop-perf takes and does not act on, each with why (printed by rank 0).
  std::vector<std::string> notes;
};

extern const char* const kPerfUsage;
StatusOr<PerfOptions> ParsePerfOptions(int argc, char** argv);
// Every flag ParsePerfOptions reads after the collective, each alias (for the usage test).
std::vector<std::string> PerfFlagNames();

// Per-rank blocks of SIZE / ranks elements (allgather, reduce_scatter, gather, scatter, alltoall).
bool PerRankBlocks(CollKind k);

// The sizes a sweep visits, in bytes: -b, then times -f (or plus -i) up to -e.
std::vector<uint64_t> SweepSizes(const PerfOptions& o);

}  // namespace hoop::perf
