// hoop-perf's subcommands' command lines (fusion, sendrecv, recorder): their options, usage texts and
// parsers, apart from the benchmarks so that parsing stays pure (tests/unit/cli_usage_test.cc
// reads the usage texts and flag names without joining a job). argv[1] is the subcommand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace hoop::perf {

// hoop-perf fusion (fusion_bench.h).
struct FusionBenchOptions {
  size_t tensors = 1000;
  uint64_t bytes = 4096;
  int rounds = 10, warmup = 3, repeats = 3;
  std::string transport, json;
  bool help = false;
};
extern const char* const kFusionUsage;
StatusOr<FusionBenchOptions> ParseFusionOptions(int argc, char** argv);
std::vector<std::string> FusionFlagNames();

// hoop-perf sendrecv (sendrecv_bench.h).
struct SendRecvOptions {
  uint64_t min_bytes = 8, max_bytes = 4 << 20, factor = 2;
  int iters = 0, repeats = 3;
  std::string transport, json;
  bool help = false;
};
extern const char* const kSendRecvUsage;
StatusOr<SendRecvOptions> ParseSendRecvOptions(int argc, char** argv);
std::vector<std::string> SendRecvFlagNames();

// hoop-perf recorder (recorder_bench.h).
struct RecorderBenchOptions {
  uint64_t bytes = 8;
  int calls = 20000, blocks = 20;
  size_t ops = 2000;  // the recording communicator's HOOP_TRACE_OPS
  std::string transport, json;
  bool help = false;
};
extern const char* const kRecorderUsage;
StatusOr<RecorderBenchOptions> ParseRecorderOptions(int argc, char** argv);
std::vector<std::string> RecorderFlagNames();

}  // namespace hoop::perf
