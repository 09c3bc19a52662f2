// Test hosts for hooprun over ssh: N network namespaces on one bridge (itself in a namespace of
// its own, so nothing outside the namespaces is touched), each with its own address
// (10.79.ID.i+1) and, when a process runs there through Run(), its own host name (a UTS
// namespace: hoop-hI). Host 0 is where hooprun runs; hosts 1..N-1 each run Debian's sshd on
// their address, with a host key and a client key made for the test. Everything - daemons,
// every process left in a namespace, the namespaces - is removed by the destructor.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace hoop::test {

class SshHosts {
 public:
  explicit SshHosts(int n);
  ~SshHosts();
  SshHosts(const SshHosts&) = delete;
  SshHosts& operator=(const SshHosts&) = delete;

  bool ok() const { return why_.empty(); }
  const std::string& why() const { return why_; }  // why the hosts could not be made (a skip)
  const std::string& address(int i) const { return addr_[static_cast<size_t>(i)]; }
  const std::string& name(int i) const { return name_[static_cast<size_t>(i)]; }
  const std::string& dir() const { return dir_; }

  // argv running `command` on host i (its namespace and host name).
  std::vector<std::string> Run(int i, const std::vector<std::string>& command) const;
  // hooprun's ssh flags for these hosts: the test's key, no known-hosts file.
  std::vector<std::string> SshFlags() const;
  // Kills every process in host i's namespace (a host that dies: sshd, sessions, agent, ranks).
  void KillHost(int i);
  // Puts `qdisc` (tc's words: "tbf rate 64kbit burst 2kb latency 5ms") on host i's link, the way
  // out of it; false where tc refuses.
  bool ShapeHost(int i, const std::string& qdisc);
  // Processes still in host i's namespace.
  int ProcessesOn(int i) const;
  // The same, waiting up to `seconds` for the count to fall to `want` (sshd ends a session's
  // process a moment after the client has gone); what was left, as "pid command" lines.
  std::string ProcessesLeftOn(int i, int want, double seconds) const;

 private:
  std::string id_, dir_, why_;
  std::vector<std::string> ns_, addr_, name_;
  std::vector<pid_t> sshd_;
};

}  // namespace hoop::test
