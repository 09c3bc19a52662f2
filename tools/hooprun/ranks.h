// The ranks hooprun starts: fork/exec with the job's environment, each in its own process
// group (so a rank's own children are stopped with it) and with PR_SET_PDEATHSIG (so a rank
// never outlives a hooprun that was killed). Their stdout and stderr come back through pipes and
// are written out whole lines at a time, prefixed with the rank.
#pragma once

#include <sys/types.h>

#include <map>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/topology.h"
#include "tools/hooprun/hosts.h"

namespace hoop::run {

struct Rank {
  int rank = 0;
  std::string host;     // as the job lists it
  bool remote = false;  // run by the agent on `host` (remote.h): no pid or pipes here
  pid_t pid = -1;
  int out_fd = -1;  // read ends; -1 once closed
  int err_fd = -1;
  std::string out_buf, err_buf;
  int out_copy = -1, err_copy = -1;  // --output-filename's files for this rank (-1: none)
  bool exited = false;
  int wait_status = 0;
  // When hooprun last relayed a line of its stderr (0: never): the rank that complained first is
  // the likelier cause of a failure than those that failed after it (Job::ExplainFailure).
  std::chrono::steady_clock::time_point last_err{};
  int local_rank = -1;  // its place among its host's ranks
  // Elastic jobs (elastic.h): started into the running job; stopped by hooprun (its host was
  // dropped, or it was never admitted), since when, and whether SIGKILL followed.
  bool newcomer = false;
  bool dismissed = false, dismiss_killed = false;
  std::chrono::steady_clock::time_point dismissed_at{};
};

// Opens DIR/rank.N/stdout and stderr on this host (--output-filename), N padded to `width`;
// -1 where it cannot (dir empty: none).
std::pair<int, int> OutputFilesFor(const std::string& dir, int rank, size_t width);

// Finds PROGRAM as execvp will (a name with a '/' as it is, else along `path`: the PATH the
// ranks get, or the default path when unset), once for the whole job. 0 when it can be run,
// else mpirun's exit code, 127 (not found) or 126 (found but not executable: no permission, a
// directory), with the line that says so in *why.
int CheckProgram(const std::string& program, const char* path, std::string* why);

// Starts PROGRAM for `rank` with `env` (NAME=VALUE strings), bound to the processors `cpus`
// (none: not bound), in the folder `wdir` (empty: hooprun's own).
StatusOr<Rank> StartRank(int rank, const std::vector<std::string>& command, const std::vector<std::string>& env,
                         const std::vector<int>& cpus = {}, const std::string& wdir = "");

// A rank's environment: `base` (the environment of the process that starts it), `extra` (-x)
// over it, then hoop's variables for `rank` of `np` at `at`, the store and the job token, and
// torchrun's RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE.
std::vector<std::string> RankEnv(std::map<std::string, std::string> base,
                                 const std::vector<std::pair<std::string, std::string>>& extra, int rank, int np,
                                 const Placement& at, const std::string& store, const std::string& token);

// A newcomer's environment (elastic hooprun starts it into a running job): `env` (RankEnv's)
// with HOOP_JOIN=1 and without HOOP_SIZE, RANK and WORLD_SIZE, which the grow that admits it
// decides; HOOP_RANK stays its number in the job.
std::vector<std::string> NewcomerEnv(std::vector<std::string> env);

// The job-wide variables a torchrun script expects, for every rank like -x, each unless `base`
// or `extra` has it: MASTER_ADDR (rank0_host) and MASTER_PORT (a free port) for
// torch.distributed's env:// rendezvous, and PYTHONUNBUFFERED=1 (Python's output reaches
// hooprun as it is printed, not when a pipe's buffer fills). RankEnv sets RANK, WORLD_SIZE,
// LOCAL_RANK and LOCAL_WORLD_SIZE.
std::vector<std::pair<std::string, std::string>> TorchrunJobEnv(
    const std::map<std::string, std::string>& base, const std::vector<std::pair<std::string, std::string>>& extra,
    const std::string& rank0_host);

// Where each of `ranks` (job ranks, all on this host) is bound (--bind-to), said on stderr with
// `report` (--report-bindings). Without hwloc nothing is bound, and asking for a binding is an
// error.
StatusOr<std::vector<std::vector<int>>> BindRanks(BindTo bind_to, bool report, const std::vector<int>& ranks);

// Reads what is available on fd and returns every complete line with the prefix; at EOF, the
// rest too, and closes fd (sets it to -1). copy_fd >= 0: the same lines, without the prefix,
// are also written there (--output-filename).
std::string Relay(int& fd, std::string& buf, const std::string& prefix, int copy_fd = -1);

// "exited with code 3" / "was killed by signal 9 (Killed)"
std::string DescribeExit(int wait_status);
bool ExitedCleanly(int wait_status);

}  // namespace hoop::run
