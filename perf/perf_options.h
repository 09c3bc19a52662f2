// hoop-perf's command line (nccl-tests conventions, plus repetitions, in-place runs, the back
// end, CSV). Parsing is pure: no job is joined here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "collectives/algo.h"
#include "collectives/kernels/wire.h"
#include "collectives/op_desc.h"
#include "common/dtype.h"
#include "common/status.h"
#include "perf/harness.h"  // AutoIters, AutoWarmup

namespace hoop::perf {

enum class Place : uint8_t { kOut, kIn, kBoth };

struct PerfOptions {
  CollKind kind = CollKind::kAllreduce;
  uint64_t min_bytes = 8, max_bytes = 64 << 20;
  uint64_t factor = 2;
  int iters = 0;    // 0: scaled by size (AutoIters, harness.h)
  int warmup = -1;  // -1: scaled by size (AutoWarmup)
  int repeats = 3;
  bool check = false;
  DType dtype = DType::kF32;
  ReduceOp op = ReduceOp::kSum;
  Algo algo = Algo::kAuto;
  Place place = Place::kOut;
  int root = 0;
  std::string transport;  // empty: HOOP_TRANSPORT, else per peer
  std::optional<Compression> compression;  // -z; unset: HOOP_COMPRESSION's setting
  std::string json, csv;
  bool help = false, version = false;
};


extern const char* const kPerfUsage;
StatusOr<PerfOptions> ParsePerfOptions(int argc, char** argv);

}  // namespace hoop::perf
