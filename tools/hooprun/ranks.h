// The ranks hooprun starts: fork/exec with the job's environment, each in its own process
// group (so a rank's own children are stopped with it) and with PR_SET_PDEATHSIG (so a rank
// never outlives a hooprun that was killed). Their stdout and stderr come back through pipes and
// are written out whole lines at a time, prefixed with the rank.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/status.h"

namespace hoop::run {

struct Rank {
  int rank = 0;
  pid_t pid = -1;
  int out_fd = -1;  // read ends; -1 once closed
  int err_fd = -1;
  std::string out_buf, err_buf;
  int out_copy = -1, err_copy = -1;  // --output-filename's files for this rank (-1: none)
  bool exited = false;
  int wait_status = 0;
};

// Finds PROGRAM as execvp will (a name with a '/' as it is, else along `path`: the PATH the
// ranks get, or the default path when unset), once for the whole job. 0 when it can be run,
// else mpirun's exit code, 127 (not found) or 126 (found but not executable: no permission, a
// directory), with the line that says so in *why.
int CheckProgram(const std::string& program, const char* path, std::string* why);

// Starts PROGRAM for `rank` with `env` (NAME=VALUE strings), bound to the processors `cpus`
// (none: not bound), in the folder `wdir` (empty: hooprun's own).
StatusOr<Rank> StartRank(int rank, const std::vector<std::string>& command, const std::vector<std::string>& env,
                         const std::vector<int>& cpus = {}, const std::string& wdir = "");

// Reads what is available on fd and returns every complete line with the prefix; at EOF, the
// rest too, and closes fd (sets it to -1). copy_fd >= 0: the same lines, without the prefix,
// are also written there (--output-filename).
std::string Relay(int& fd, std::string& buf, const std::string& prefix, int copy_fd = -1);

// "exited with code 3" / "was killed by signal 9 (Killed)"
std::string DescribeExit(int wait_status);
bool ExitedCleanly(int wait_status);

}  // namespace hoop::run
