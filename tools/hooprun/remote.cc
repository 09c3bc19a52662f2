// hooprun's side of remote hosts: the ssh command line, the reachability check, the store's
// address, and starting an agent (remote.h). The agent itself is agent.cc.
#include "tools/hooprun/remote.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cstring>
#include <thread>

#include "common/config.h"
#include "tools/hooprun/ranks.h"

namespace hoop::run {
namespace {

std::vector<std::string> Environment() {
  std::vector<std::string> env;
  for (auto& [k, v] : ProcessEnvironment()) env.push_back(k + "=" + v);
  return env;
}

// The last non-empty line of `text`, for a one-line reason.
std::string LastLine(const std::string& text) {
  size_t end = text.find_last_not_of("\r\n \t");
  if (end == std::string::npos) return "";
  size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1,
                     end - (start == std::string::npos ? 0 : start + 1) + 1);
}

}  // namespace

std::vector<std::string> SshCommand(const SshOptions& o, const std::string& host, const std::string& remote,
                                    int connect_timeout_s) {
  // Keep-alives: a host that vanishes without closing the connection is noticed in ~15 s.
  std::vector<std::string> c{"ssh",
                             "-o",
                             "BatchMode=yes",
                             "-o",
                             "ConnectTimeout=" + std::to_string(connect_timeout_s),
                             "-o",
                             "ServerAliveInterval=5",
                             "-o",
                             "ServerAliveCountMax=3",
                             "-T"};
  if (o.port > 0) c.insert(c.end(), {"-p", std::to_string(o.port)});
  if (!o.identity.empty()) c.insert(c.end(), {"-i", o.identity});
  c.insert(c.end(), o.args.begin(), o.args.end());
  c.push_back(host);
  c.push_back(remote);
  return c;
}

Status CheckHosts(const std::vector<std::string>& hosts, const SshOptions& o) {
  using Clock = std::chrono::steady_clock;
  constexpr int kTries = 3;
  const auto deadline = Clock::now() + std::chrono::duration<double>(o.start_timeout_s);
  const int connect = std::max(1, std::min(10, static_cast<int>(o.start_timeout_s)));
  struct Try {
    std::string host;
    Rank proc;
    bool running = false, reached = false;
    std::string said;  // ssh's stderr, of the last attempt
    Clock::time_point next;
    int attempts = 0;
  };
  std::vector<Try> tries;
  for (const auto& h : hosts) tries.push_back({h, {}, false, false, "", Clock::now()});
  auto env = Environment();
  while (true) {
    bool pending = false;
    for (auto& t : tries) {
      if (t.reached) continue;
      // Three tries at most, a second apart: a host whose sshd is still starting gets in; one
      // that cannot be resolved or refuses the key is reported in seconds, not at the deadline.
      if (!t.running && t.attempts < kTries && Clock::now() >= t.next && Clock::now() < deadline) {
        ++t.attempts;
        auto cmd = SshCommand(o, t.host, "true", connect);
        cmd.insert(cmd.begin() + 1, "-n");  // leave hooprun's stdin alone
        auto p = StartRank(-1, cmd, env);
        if (!p.ok()) return p.status().WithContext("ssh to " + t.host);
        t.proc = std::move(p).value();
        t.running = true;
        t.said.clear();
      }
      if (t.running) {
        std::string sink;
        Relay(t.proc.out_fd, sink, "");
        std::string err = Relay(t.proc.err_fd, t.proc.err_buf, "");
        if (!err.empty()) t.said += err;
        int st = 0;
        if (::waitpid(t.proc.pid, &st, WNOHANG) == t.proc.pid) {
          t.running = false;
          t.said += Relay(t.proc.err_fd, t.proc.err_buf, "") + t.proc.err_buf;
          for (int* fd : {&t.proc.out_fd, &t.proc.err_fd})
            if (*fd >= 0) ::close(*fd), *fd = -1;
          if (ExitedCleanly(st))
            t.reached = true;
          else
            t.next = Clock::now() + std::chrono::seconds(1);  // another try while time is left
          if (!t.reached && LastLine(t.said).empty()) t.said = "ssh " + DescribeExit(st);
        }
      }
      pending |= !t.reached && (t.running || (t.attempts < kTries && Clock::now() < deadline));
    }
    if (!pending) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::string bad;
  for (auto& t : tries) {
    if (t.running) {  // still trying at the deadline
      ::kill(-t.proc.pid, SIGKILL);
      ::waitpid(t.proc.pid, nullptr, 0);
      if (t.proc.out_fd >= 0) ::close(t.proc.out_fd);
      if (t.proc.err_fd >= 0) ::close(t.proc.err_fd);
      t.said = "no answer within --start-timeout " + std::to_string(static_cast<int>(o.start_timeout_s)) + " s";
    }
    if (!t.reached) bad += (bad.empty() ? "" : "; ") + t.host + ": " + LastLine(t.said);
  }
  if (bad.empty()) return Status::Ok();
  return Unavailable("cannot reach every host over ssh (ssh -o BatchMode=yes: keys, not passwords) - " + bad);
}

std::vector<std::string> LocalAddresses() {
  std::vector<std::string> out;
  ifaddrs* all = nullptr;
  if (::getifaddrs(&all) != 0) return out;
  for (ifaddrs* i = all; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {0};
    if (::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof text))
      out.push_back(text);
  }
  ::freeifaddrs(all);
  return out;
}

StatusOr<std::string> StoreAddress(const std::string& address, const std::string& interface,
                                   const std::string& first_remote) {
  if (!address.empty()) {
    in_addr a{};
    if (::inet_pton(AF_INET, address.c_str(), &a) != 1)
      return InvalidArgument("--store-address '" + address + "': expected an IPv4 address of this host");
    return address;
  }
  if (!interface.empty()) {
    ifaddrs* all = nullptr;
    if (::getifaddrs(&all) != 0) return ErrnoStatus(Code::kInternal, "getifaddrs", errno);
    std::string found, names;
    for (ifaddrs* i = all; i; i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
      names += (names.empty() ? "" : ", ") + std::string(i->ifa_name);
      if (interface == i->ifa_name && found.empty()) {
        char text[INET_ADDRSTRLEN] = {0};
        ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof text);
        found = text;
      }
    }
    ::freeifaddrs(all);
    if (found.empty())
      return InvalidArgument("--network-interface " + interface +
                             ": no IPv4 address on it (interfaces with one: " + names + ")");
    return found;
  }
  // The address this host would use to reach the first remote host (a UDP connect sends nothing).
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (int e = ::getaddrinfo(first_remote.c_str(), "22", &hints, &res); e != 0)
    return Unavailable("host '" + first_remote + "': " + ::gai_strerror(e) +
                       " (give the store's address with --store-address or --network-interface)");
  std::string out;
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
    sockaddr_in me{};
    socklen_t len = sizeof me;
    char text[INET_ADDRSTRLEN] = {0};
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len) == 0 &&
        ::inet_ntop(AF_INET, &me.sin_addr, text, sizeof text))
      out = text;
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(res);
  if (out.empty() || out == "0.0.0.0")
    return Unavailable("no route from this host to '" + first_remote +
                       "' (give the store's address with --store-address or --network-interface)");
  return out;
}

StatusOr<Agent> StartAgent(const std::string& host, const SshOptions& o, const std::string& self,
                           const std::string& plan) {
  int in[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return ErrnoStatus(Code::kInternal, "pipe", errno);
  // The agent's stdin is the read end: StartRank's child inherits fd 0, so put it there for the
  // fork and restore ours after.
  const int saved = ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
  ::dup2(in[0], STDIN_FILENO);
  const int connect = std::max(1, std::min(10, static_cast<int>(o.start_timeout_s)));
  // exec: the agent replaces the login shell, so the session's end reaches it directly.
  auto p = StartRank(-1, SshCommand(o, host, "exec " + self + " --agent", connect), Environment());
  if (saved >= 0) {
    ::dup2(saved, STDIN_FILENO);
    ::close(saved);
  } else {
    ::close(STDIN_FILENO);
  }
  ::close(in[0]);
  if (!p.ok()) {
    ::close(in[1]);
    return p.status().WithContext("ssh to " + host);
  }
  Agent a;
  a.host = host;
  a.pid = p->pid;
  a.out_fd = p->out_fd;
  a.err_fd = p->err_fd;
  a.in_fd = in[1];
  // The plan is small (well under a pipe's 64 KiB for any sane job); written before anything
  // reads it, so a blocking write here could only wait for ssh, which reads it at once.
  std::string line = plan + "\n";
  for (size_t done = 0; done < line.size();) {
    ssize_t n = ::write(a.in_fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoStatus(Code::kUnavailable, "handing the plan to the agent on " + host, errno);
    done += static_cast<size_t>(n);
  }
  ::fcntl(a.in_fd, F_SETFL, O_NONBLOCK);
  return a;
}

}  // namespace hoop::run
