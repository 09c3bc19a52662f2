// What the test rank programs (hoop-test-rank, hoop-fusion-rank) share: joining the job from
// the environment, and the victim's end in the kill tests.
#pragma once

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "collectives/api/bootstrap.h"

namespace hoop::test {

// Null on failure, with *exit_code set: 2 for bad settings, 1 for a job it could not join.
inline std::unique_ptr<Job> JoinTestJob(const char* prog, Config* cfg, int* exit_code) {
  auto c = Config::FromProcessEnv();
  if (!c.ok()) {
    std::fprintf(stderr, "%s: %s\n", prog, c.status().message().c_str());
    *exit_code = 2;
    return nullptr;
  }
  *cfg = *c;
  auto job = JoinJob(*cfg);
  if (!job.ok()) {
    std::printf("rank %d: join failed: %s\n", cfg->rank, job.status().ToString().c_str());
    *exit_code = 1;
    return nullptr;
  }
  return std::move(job).value();
}

// SIGKILLs this process `after` from now, from a thread of its own, whatever it is doing then.
inline void KillSelfAfter(std::chrono::milliseconds after) {
  std::thread([after] {
    std::this_thread::sleep_for(after);
    ::raise(SIGKILL);
  }).detach();
}

}  // namespace hoop::test
