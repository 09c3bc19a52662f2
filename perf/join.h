// Joining the job a hoop-perf command runs in: the Config from the environment, `--transport` winning over
// HOOP_TRANSPORT, then JoinJob. On failure it prints "PROG: cause" and gives the exit code: 2 for
// bad settings, 1 for a job it could not join.
#pragma once

#include <memory>
#include <string>

#include "collectives/api/bootstrap.h"

namespace hoop::perf {

struct PerfJob {
  Config cfg;
  std::unique_ptr<Job> job;  // null on failure
  int exit_code = 0;
};

// timeout_s > 0 replaces HOOP_TIMEOUT (hoop-perf -T).
PerfJob JoinPerfJob(const char* prog, const std::string& transport, double timeout_s = 0);

}  // namespace hoop::perf
