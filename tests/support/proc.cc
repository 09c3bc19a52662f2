#include "tests/support/proc.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "common/config.h"
#include "tools/hooprun/shm_leftovers.h"

namespace hoop::test {

using run::ReadProcFile;

std::string Bin(const std::string& name) { return std::string(HOOP_BIN_DIR) + "/" + name; }

bool HaveMpirun() { return ::access("/usr/bin/mpirun", X_OK) == 0; }

ProcResult RunUnderMpirun(int np, const std::vector<std::string>& program, double seconds) {
  ProcOptions o = Within(seconds);
  o.env["OMPI_ALLOW_RUN_AS_ROOT"] = "1";
  o.env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1";
  o.env["OMPI_MCA_plm"] = "isolated";  // no ssh/rsh agent needed on one host
  o.env["OMPI_MCA_btl_vader_single_copy_mechanism"] = "none";
  int port = FreeLoopbackPort();
  if (port <= 0) {
    ProcResult failed;
    failed.output = "no free loopback port for the store";
    return failed;
  }
  std::vector<std::string> argv = {"/usr/bin/mpirun",
                                   "--oversubscribe",
                                   "-np",
                                   std::to_string(np),
                                   "-x",
                                   "HOOP_STORE=tcp://127.0.0.1:" + std::to_string(port),
                                   "-x",
                                   "HOOP_JOB_TOKEN=mpirun-test-token"};
  argv.insert(argv.end(), program.begin(), program.end());
  return RunProc(argv, o);
}

ProcResult RunProc(const std::vector<std::string>& argv, const ProcOptions& opts) {
  std::map<std::string, std::string> env = ProcessEnvironment();
  for (auto& u : opts.unset) env.erase(u);
  for (auto& [k, v] : opts.env) env[k] = v;
  std::vector<std::string> envs;
  for (auto& [k, v] : env) envs.push_back(k + "=" + v);
  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (auto& e : envs) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return {};
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(pipefd[1], 1);
    ::dup2(pipefd[1], 2);
    ::execve(cargv[0], cargv.data(), cenv.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ::close(pipefd[1]);
  ProcResult r;
  bool signalled = false, exited = false;
  double exited_at = 0;
  int status = 0;
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  int fd = pipefd[0];
  while (fd >= 0 || !exited) {
    if (fd >= 0) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) > 0) {
        char buf[65536];
        ssize_t n = ::read(fd, buf, sizeof(buf));
        if (n > 0)
          r.output.append(buf, static_cast<size_t>(n));
        else {
          ::close(fd);
          fd = -1;
        }
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!exited && ::waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      exited_at = elapsed();
    }
    if (opts.signal_after_s > 0 && !signalled && elapsed() > opts.signal_after_s) {
      ::kill(pid, opts.signal);
      signalled = true;
    }
    if (elapsed() > opts.timeout_s && !r.timed_out) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
      if (!exited) ::kill(pid, SIGKILL);
    }
    // After the program exits, stragglers holding the pipe (its own children) get one second.
    if (exited && fd >= 0 && elapsed() > exited_at + 2) {
      ::close(fd);
      fd = -1;
    }
  }
  r.seconds = elapsed();
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

std::string LineOf(const std::string& out, const std::string& part) {
  std::istringstream is(out);
  std::string line;
  while (std::getline(is, line))
    if (line.find(part) != std::string::npos) return line;
  return "";
}

namespace {
bool LoopbackPortFree(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  if (fd >= 0) ::close(fd);
  return ok;
}
}  // namespace

// Drawn below the kernel's ephemeral range: a port the kernel hands out for some other test's
// outgoing connection could be taken between this check and the job's bind.
int FreeLoopbackPort() {
  int top = 30000;
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  if (int lo = 0; range >> lo && lo - 1 < top) top = lo - 1;
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> pick(10000, top);
  for (int i = 0; i < 200; ++i)
    if (int port = pick(rng); LoopbackPortFree(port)) return port;
  return 0;
}

std::string NewMarker() {
  std::random_device rd;
  std::ostringstream os;
  os << "hoop-test-marker-" << ::getpid() << "-" << rd();
  return os.str();
}

int CountProcessesWith(const std::string& marker) {
  int count = 0;
  DIR* d = ::opendir("/proc");
  if (!d) return 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    if (ReadProcFile(std::string("/proc/") + e->d_name + "/cmdline").find(marker) != std::string::npos) ++count;
  }
  ::closedir(d);
  return count;
}

int WaitGone(const std::string& marker, double seconds) {
  auto t0 = std::chrono::steady_clock::now();
  while (true) {
    int n = CountProcessesWith(marker);
    if (n == 0 || std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > seconds) return n;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::set<std::string> DevShm() {
  std::set<std::string> names;
  if (DIR* d = ::opendir("/dev/shm")) {
    while (dirent* e = ::readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") names.insert(e->d_name);
    ::closedir(d);
  }
  return names;
}

std::vector<std::string> LeftInDevShm(const std::set<std::string>& before, double seconds) {
  auto t0 = std::chrono::steady_clock::now();
  while (true) {
    std::vector<std::string> left;
    const std::set<std::string> held = hoop::run::HeldInDevShm();
    for (const auto& name : DevShm())
      if (!before.count(name) && !held.count(name)) left.push_back(name);
    if (left.empty() || std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > seconds)
      return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

int SignalRank(const std::string& marker, int rank, int signal) {
  const std::string want = "HOOP_RANK=" + std::to_string(rank);
  int count = 0;
  DIR* d = ::opendir("/proc");
  if (!d) return 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string dir = std::string("/proc/") + e->d_name;
    if (ReadProcFile(dir + "/cmdline").find(marker) == std::string::npos) continue;
    const std::string env = ReadProcFile(dir + "/environ");
    bool match = false;
    for (size_t at = 0; at < env.size();) {
      const size_t end = env.find('\0', at);
      if (env.compare(at, (end == std::string::npos ? env.size() : end) - at, want) == 0) match = true;
      if (end == std::string::npos) break;
      at = end + 1;
    }
    if (match && ::kill(std::atoi(e->d_name), signal) == 0) ++count;
  }
  ::closedir(d);
  return count;
}

}  // namespace hoop::test
