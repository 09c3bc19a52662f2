// Ranks on other hosts: hooprun starts one agent per remote host over ssh (the same hooprun
// binary, at the same path, run as `hooprun --agent`), as mpirun starts its orted. The agent
// reads the host's share of the job (its ranks, the command, the environment, the store's address
// and the job token) as one JSON line on its standard input - so the token never appears on a
// command line or in ssh's logs - starts those ranks there, relays their output already prefixed
// "[host:rank]", and reports each rank's start and exit on control lines of its own. It lives
// exactly as long as its ssh session: when its standard input closes (hooprun stopped it, or the
// connection or hooprun died) it stops its ranks, SIGTERM then SIGKILL, and exits; its ranks die
// with it (PR_SET_PDEATHSIG) if it is killed.
//
// Agent -> hooprun, on the agent's stdout: rank output lines, which start with '[', and control
// lines, which start with kControl:  "started RANK PID", "exit RANK WAIT_STATUS", "fail CODE WHY"
// (the job cannot run there; hooprun exits with CODE, 127 for a missing program as mpirun).
// hooprun -> agent, on its stdin: the plan, then "term" or "kill" lines; end of file: stop.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/status.h"
#include "tools/hooprun/hosts.h"

namespace hoop::run {

inline constexpr char kControl = '\x1e';  // ASCII record separator: never the first byte of a prefixed line

struct SshOptions {
  int port = 0;                   // -p (0: ssh's default)
  std::string identity;           // -i
  std::vector<std::string> args;  // --ssh-args, split on spaces
  double start_timeout_s = 30;    // --start-timeout: the reachability check and the agents' start
};

// ssh's command line to run `remote` (a shell command) on `host`, never asking anything
// (BatchMode) and giving up a connection after `connect_timeout_s`.
std::vector<std::string> SshCommand(const SshOptions& o, const std::string& host, const std::string& remote,
                                    int connect_timeout_s);

// Reaches every host in `hosts` over ssh at once (`true` run there), three tries each within
// o.start_timeout_s; OK when all answered, else one error naming every host that did not and
// ssh's last words for each.
Status CheckHosts(const std::vector<std::string>& hosts, const SshOptions& o);

// This host's IPv4 addresses (a host listed by one of them is this host).
std::vector<std::string> LocalAddresses();

// Where the store listens so that every host can reach it: `address` if given; else the IPv4
// address of `interface` if given; else this host's address on the route to `first_remote`.
StatusOr<std::string> StoreAddress(const std::string& address, const std::string& interface,
                                   const std::string& first_remote);

struct Agent {
  std::string host;
  pid_t pid = -1;  // the ssh process (its own process group)
  int in_fd = -1;  // its stdin: the plan, then term/kill; closed to stop it
  int out_fd = -1, err_fd = -1;
  std::string out_buf, err_buf, last_err;
  std::vector<int> ranks;  // job ranks it runs
  bool newcomers = false;  // started for newcomers to an elastic job (its failure fails only them)
  bool exited = false;
  int wait_status = 0;
};

// Starts the agent for `host` (`self`: this hooprun's absolute path, which must be the same on
// that host) and hands it `plan` (one line of JSON).
StatusOr<Agent> StartAgent(const std::string& host, const SshOptions& o, const std::string& self,
                           const std::string& plan);

// hooprun --agent: reads the plan on stdin, runs its ranks, returns the agent's exit code.
int RunAgent();

}  // namespace hoop::run
