// --host-discovery-script (horovodrun's): a program the user gives that prints the hosts an
// elastic job may use, one HOST[:SLOTS] per line (a host without ":SLOTS" has one slot; blank
// lines and '#' comments are skipped). hooprun runs it with /bin/sh -c (so "python3 find.py"
// works as well as a path) once before the job starts, waiting for it, and then every second
// while the job runs, from its poll loop without waiting: Start, then Read on each turn, and
// Reaped when the loop's waitpid finds it. A run that takes longer than kDiscoveryLimit is killed
// and counts as failed; a failed run changes nothing.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "tools/hooprun/hosts.h"

namespace hoop::run {

inline constexpr auto kDiscoveryLimit = std::chrono::seconds(10);

// Runs the script and waits for its hosts (before the job starts).
// default_slots: a listed host's slots where its line names none (--slots-per-host).
StatusOr<std::vector<HostSlots>> DiscoverNow(const std::string& script, int default_slots = 1);

// One run of the script while the job goes on.
class DiscoveryRun {
 public:
  DiscoveryRun() = default;
  DiscoveryRun(const DiscoveryRun&) = delete;
  DiscoveryRun& operator=(const DiscoveryRun&) = delete;
  ~DiscoveryRun();

  // Starts the script (its stdout to a pipe read here; stderr as hooprun's).
  Status Start(const std::string& script, int default_slots = 1);
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // Takes what the script wrote so far; kills it once it ran past kDiscoveryLimit.
  void Read();
  // The loop's waitpid found the script's end (`status`).
  void Reaped(int status);
  // Once the script ended and its output is read: the hosts, or why not; then ready for the next.
  std::optional<StatusOr<std::vector<HostSlots>>> Result();

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string script_, out_;
  int default_slots_ = 1;
  std::optional<int> status_;
  bool killed_ = false;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace hoop::run
