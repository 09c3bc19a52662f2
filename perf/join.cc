#include "perf/join.h"

#include <cstdio>

namespace hoop::perf {

PerfJob JoinPerfJob(const char* prog, const std::string& transport, double timeout_s) {
  PerfJob p;
  auto cfg = Config::FromProcessEnv();
  if (!cfg.ok()) {
    std::fprintf(stderr, "%s: %s\n", prog, cfg.status().message().c_str());
    p.exit_code = 2;
    return p;
  }
  p.cfg = *cfg;
  if (!transport.empty()) p.cfg.transport = transport;
  if (timeout_s > 0) p.cfg.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000 + 0.5));
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
