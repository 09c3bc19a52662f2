// Running real programs from tests: in a fresh process group, with a hard time bound after which
// the whole group is SIGKILLed, output captured. Also a check that no process carrying a marker
// argument is left anywhere on the machine.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace hoop::test {

struct ProcResult {
  int exit_code = -1;  // -1 if killed by a signal
  int signal = 0;
  bool timed_out = false;
  double seconds = 0;
  std::string output;  // stdout and stderr, interleaved as written
};

struct ProcOptions {
  std::map<std::string, std::string> env;  // added to (or replacing in) this process's environment
  std::vector<std::string> unset;          // removed from it
  double timeout_s = 60;
  double signal_after_s = 0;  // > 0: send `signal` to the program at this time
  int signal = 0;
};

inline ProcOptions Within(double seconds) {
  ProcOptions o;
  o.timeout_s = seconds;
  return o;
}

// Sends `signal` to the program `after` seconds in; the whole run is bounded by `seconds`.
inline ProcOptions SignalAfter(int signal, double after, double seconds) {
  ProcOptions o = Within(seconds);
  o.signal = signal;
  o.signal_after_s = after;
  return o;
}

ProcResult RunProc(const std::vector<std::string>& argv, const ProcOptions& opts = {});
// A marker that is unique to this test run; put it in a rank's arguments, then ask whether any
// process with it in its command line is still alive.
std::string NewMarker();
int CountProcessesWith(const std::string& marker);
// Sends `signal` to every process with the marker in its command line and HOOP_RANK=rank in its
// environment (one rank of a hooprun job); returns how many it signalled.
int SignalRank(const std::string& marker, int rank, int signal);
// Waits up to `seconds` for every process with the marker to disappear; returns how many remain.
int WaitGone(const std::string& marker, double seconds);
// The names in /dev/shm now.
std::set<std::string> DevShm();
// The names in /dev/shm that are not in `before` and that no live process holds open or mapped:
// what a job whose processes are all gone left behind. /dev/shm is the whole machine's, so a
// file another test's live process holds is not counted, and neither is one that goes away or
// gets a holder within `seconds` (one being made or removed right now).
std::vector<std::string> LeftInDevShm(const std::set<std::string>& before, double seconds);
std::string Bin(const std::string& name);  // build/bin/NAME
bool HaveMpirun();                         // /usr/bin/mpirun is there
// Runs `program` as `np` ranks under OpenMPI's mpirun on this host (as root, oversubscribed),
// with HOOP_STORE on a free loopback port (rank 0 serves it) and a job token; bounded by `seconds`.
ProcResult RunUnderMpirun(int np, const std::vector<std::string>& program, double seconds);
int FreeLoopbackPort();  // a port nobody holds right now, below the ephemeral range
// The first line of `out` that contains `part`, or "".
std::string LineOf(const std::string& out, const std::string& part);

}  // namespace hoop::test
