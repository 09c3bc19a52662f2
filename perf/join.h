// Joining the job a hoop-perf command runs in: the Config from the environment, `-t` winning over
// HOOP_TRANSPORT, then JoinJob. On failure it prints "PROG: cause" and gives the exit code: 2 for
// bad settings, 1 for a job it could not join.
#pragma once

#include <memory>
#include <string>

#include "collectives/bootstrap.h"

namespace hoop::perf {

struct PerfJob {
  Config cfg;
  std::unique_ptr<Job> job;  // null on failure
  int exit_code = 0;
};

PerfJob JoinPerfJob(const char* prog, const std::string& transport);

}  // namespace hoop::perf
