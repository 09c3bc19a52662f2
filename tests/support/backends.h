// The back-end configurations every multi-process test runs over: each back end forced with
// HOOP_TRANSPORT, and UCX and libfabric each over their TCP and their shared-memory paths.
// HOOPTEST_BACKENDS=tcp,shm (a comma list of labels) keeps only those: the sanitizer runs use it
// (scripts/test.sh --sanitize). It is the tests' own variable, not a HOOP_* setting; so is
// HOOPTEST_SEED, which repeats a run's draws (NativeAndOneDrawn).
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/proc.h"

namespace hoop::test {

struct Backend {
  std::string label;
  std::map<std::string, std::string> env;
};

inline const std::vector<Backend>& Backends() {
  static const std::vector<Backend> all = [] {
    std::vector<Backend> every = {
        {"tcp", {{"HOOP_TRANSPORT", "tcp"}}},
        {"shm", {{"HOOP_TRANSPORT", "shm"}}},
        {"ucx/tcp", {{"HOOP_TRANSPORT", "ucx"}, {"UCX_TLS", "tcp"}}},
        {"ucx/sm", {{"HOOP_TRANSPORT", "ucx"}, {"UCX_TLS", "sm"}}},
        {"ofi/tcp", {{"HOOP_TRANSPORT", "ofi"}, {"FI_PROVIDER", "tcp;ofi_rxm"}}},
        {"ofi/shm", {{"HOOP_TRANSPORT", "ofi"}, {"FI_PROVIDER", "shm"}}},
    };
    const char* only = std::getenv("HOOPTEST_BACKENDS");
    if (!only) return every;
    std::vector<Backend> kept;
    const std::string list = std::string(",") + only + ",";
    for (auto& b : every)
      if (list.find("," + b.label + ",") != std::string::npos) kept.push_back(b);
    return kept;
  }();
  return all;
}

// Whether back end `label` is among those this run tests (HOOPTEST_BACKENDS).
inline bool Selected(const std::string& label) {
  for (const Backend& b : Backends())
    if (b.label == label) return true;
  return false;
}

// The back end labelled `label` (tcp, shm, ucx/tcp, ...); callers check Selected first where a
// run may leave it out.
inline const Backend& Named(const std::string& label) {
  for (const Backend& b : Backends())
    if (b.label == label) return b;
  throw std::runtime_error("no back end " + label + " in this run (HOOPTEST_BACKENDS)");
}

// The seed of this run's draws (HOOPTEST_SEED, else from the clock), said once on stderr so that
// a failing draw can be run again.
inline unsigned RunSeed() {
  static const unsigned seed = [] {
    const char* env = std::getenv("HOOPTEST_SEED");
    const unsigned s =
        env ? static_cast<unsigned>(std::strtoul(env, nullptr, 10))
            : static_cast<unsigned>(std::chrono::system_clock::now().time_since_epoch().count() % 1000003);
    std::fprintf(stderr, "hooptest: this run's draws: HOOPTEST_SEED=%u\n", s);
    return s;
  }();
  return seed;
}

// For the costly cases that repeat the whole matrix under another setting: tcp and shm (where this
// run tests them) and one of the other back ends, drawn by RunSeed(), so that over runs each is
// covered without every run paying for all six. HOOPTEST_BACKENDS set: every one it keeps.
inline std::vector<Backend> NativeAndOneDrawn() {
  if (std::getenv("HOOPTEST_BACKENDS")) return Backends();
  std::vector<Backend> kept, others;
  for (const Backend& b : Backends()) (b.label == "tcp" || b.label == "shm" ? kept : others).push_back(b);
  if (!others.empty()) kept.push_back(others[RunSeed() % others.size()]);
  return kept;
}

// UCX before 1.14, built with its assertions (Debian bookworm's 1.13.1 is), aborts a process
// when a peer dies while that process's TCP endpoint to it is still being wired: the wireup
// request still queued on the endpoint trips an assertion in ucp_request_send_state_ff
// (openucx/ucx#8175 removed it for 1.14). Tests that kill a rank while the others connect to it
// (a death inside a shrink) leave UCX's tcp out where this is true, and say so.
inline bool UcxTcpAbortsOnDeathDuringWireup() {
  static const bool old = [] {
    auto r = RunProc({Bin("hoop-info")}, Within(30));
    const auto at = r.output.find("UCX ");
    if (at == std::string::npos) return false;  // no UCX back end here
    int major = 0, minor = 0;
    if (std::sscanf(r.output.c_str() + at, "UCX %d.%d", &major, &minor) != 2) return false;
    return major < 1 || (major == 1 && minor < 14);
  }();
  return old;
}

// `hooprun -np n PROGRAM MODE_ARGS... marker` over back end b, with `env` added (HOOP_TIMEOUT and
// the like) and a hard bound of timeout_s. PROGRAM: hoop-test-rank, or hoop-fusion-rank.
inline ProcResult RunRanks(const Backend& b, int n, const std::vector<std::string>& mode_args,
                           const std::string& marker, double timeout_s, const std::map<std::string, std::string>& env,
                           const std::string& program = "hoop-test-rank") {
  ProcOptions o;
  o.env = b.env;
  for (const auto& [k, v] : env) o.env[k] = v;
  o.timeout_s = timeout_s;
  std::vector<std::string> argv = {Bin("hooprun"), "-np", std::to_string(n), Bin(program)};
  argv.insert(argv.end(), mode_args.begin(), mode_args.end());
  argv.push_back(marker);
  return RunProc(argv, o);
}

}  // namespace hoop::test
