#include "perf/join.h"

#include <cstdio>

namespace hoop::perf {

PerfJob JoinPerfJob(const char* prog, const std::string& transport) {
  PerfJob p;
  auto cfg = Config::FromProcessEnv();
  if (!cfg.ok()) {
    std::fprintf(stderr, "%s: %s\n", prog, cfg.status().message().c_str());
    p.exit_code = 2;
    return p;
  }
  p.cfg = *cfg;
  if (!transport.empty()) p.cfg.transport = transport;
  auto job = JoinJob(p.cfg);
  if (!job.ok()) {
    std::fprintf(stderr, "%s: %s\n", prog, job.status().message().c_str());
    p.exit_code = 1;
    return p;
  }
  p.job = std::move(job).value();
  return p;
}

}  // namespace hoop::perf
