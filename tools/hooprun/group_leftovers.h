// What a rank left running in its process group when it ended: processes it started that did not
// end with it (a `server &` of a wrapper script, a worker pool, a grandchild still holding a
// port, a file or a GPU's memory). Every rank runs in a process group of its own (ranks.h); once
// the job's ranks have all ended, hooprun - and its agent on another host, for its ranks - stops
// what is left in their groups, as torchrun stops its workers' sessions and Slurm a job step's
// processes: SIGTERM, a grace, then SIGKILL, and says which rank left what. A process that left
// its rank's group (setsid, a daemon) is not the job's and is left alone.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace hoop::run {

// Live members of process group `pgid` (zombies left out), as "PID COMMAND".
std::vector<std::string> GroupMembers(pid_t pgid);

// For each (who, process group) whose leader is gone (reaped) and that still has members: after
// a moment for them to end by themselves, SIGTERM, up to `grace` for them to end, then SIGKILL.
// Returns a line per group that had any: "WHO left N process(es) running (PID COMMAND, ...):
// stopped (SIGTERM|SIGKILL)".
std::vector<std::string> StopLeftovers(const std::vector<std::pair<std::string, pid_t>>& groups,
                                       std::chrono::milliseconds grace = std::chrono::seconds(2));

}  // namespace hoop::run
