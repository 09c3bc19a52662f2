// hoop-perf's command line (nccl-tests conventions).
#pragma once

#include <cstdint>
#include <string>

#include "collectives/algo.h"
#include "collectives/op_desc.h"
#include "common/dtype.h"
#include "common/status.h"

namespace hoop::perf {

struct PerfOptions {
  CollKind kind = CollKind::kAllreduce;
  uint64_t min_bytes = 8, max_bytes = 64 << 20;
  uint64_t factor = 2;
  int iters = 20, warmup = 5;
  bool check = false;
  DType dtype = DType::kF32;
  ReduceOp op = ReduceOp::kSum;
  Algo algo = Algo::kAuto;
  int root = 0;
  std::string json;
  bool help = false;
};

extern const char* const kPerfUsage;
StatusOr<PerfOptions> ParsePerfOptions(int argc, char** argv);

}  // namespace hoop::perf
