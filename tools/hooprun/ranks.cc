#include "tools/hooprun/ranks.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "transport/util/socket.h"

namespace hoop::run {

int CheckProgram(const std::string& program, const char* path, std::string* why) {
  auto runnable = [](const std::string& file, int* err) {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) return *err = errno, false;
    if (S_ISDIR(st.st_mode)) return *err = EISDIR, false;
    if (::access(file.c_str(), X_OK) != 0) return *err = errno, false;
    return true;
  };
  int err = ENOENT;
  if (program.empty()) {
    *why = "no PROGRAM given";
    return 127;
  }
  if (program.find('/') != std::string::npos) {
    if (runnable(program, &err)) return 0;
    *why = program + ": " + std::strerror(err);
    return err == ENOENT || err == ENOTDIR ? 127 : 126;
  }
  const std::string dirs = path ? path : "/bin:/usr/bin";  // execvp's default path
  int found_err = 0;                                       // a file of that name that could not be run
  for (size_t start = 0;;) {
    size_t colon = dirs.find(':', start);
    std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    std::string file = (dir.empty() ? "." : dir) + "/" + program;
    if (runnable(file, &err)) return 0;
    if (err != ENOENT && err != ENOTDIR && !found_err) found_err = err;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (found_err) {
    *why = program + ": " + std::strerror(found_err);
    return 126;
  }
  *why = program + ": command not found (not in PATH)";
  return 127;
}

StatusOr<Rank> StartRank(int rank, const std::vector<std::string>& command, const std::vector<std::string>& env,
                         const std::vector<int>& cpus, const std::string& wdir) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) return ErrnoStatus(Code::kInternal, "pipe", errno);
  std::vector<char*> argv, envp;
  for (auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return ErrnoStatus(Code::kInternal, "fork", errno);
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // hooprun died before the line above
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    // Threads the rank starts inherit the binding: its progress threads stay inside it.
    if (!cpus.empty() && ::sched_setaffinity(0, sizeof set, &set) != 0) {
      std::string msg = "hooprun: cannot bind rank " + std::to_string(rank) + ": " + std::strerror(errno) + "\n";
      ssize_t ignored = ::write(err[1], msg.data(), msg.size());
      (void)ignored;
      ::_exit(127);
    }
    if (!wdir.empty() && ::chdir(wdir.c_str()) != 0) {
      std::string msg =
          "hooprun: rank " + std::to_string(rank) + ": cannot enter " + wdir + ": " + std::strerror(errno) + "\n";
      ssize_t ignored = ::write(err[1], msg.data(), msg.size());
      (void)ignored;
      ::_exit(127);
    }
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::execvpe(argv[0], argv.data(), envp.data());
    std::string msg = "hooprun: cannot run '" + command[0] + "': " + std::strerror(errno) + "\n";
    ssize_t ignored = ::write(STDERR_FILENO, msg.data(), msg.size());
    (void)ignored;
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also from the parent, so the group exists before we signal it
  ::close(out[1]);
  ::close(err[1]);
  ::fcntl(out[0], F_SETFL, O_NONBLOCK);
  ::fcntl(err[0], F_SETFL, O_NONBLOCK);
  Rank r;
  r.rank = rank;
  r.pid = pid;
  r.out_fd = out[0];
  r.err_fd = err[0];
  return r;
}

namespace {
// The whole of `text` to a file (a rank's --output-filename copy); errors are the caller's to
// notice later, never a reason to stop relaying to the terminal.
void WriteAll(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}
}  // namespace

std::string Relay(int& fd, std::string& buf, const std::string& prefix, int copy_fd) {
  if (fd < 0) return "";
  char chunk[65536];
  bool eof = false;
  // A bounded bite per call, so one chatty rank cannot make the loop buffer without limit.
  for (int bites = 0; bites < 16; ++bites) {
    ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n > 0) {
      buf.append(chunk, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    eof = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
    break;
  }
  std::string out, raw;
  size_t start = 0, nl;
  while ((nl = buf.find('\n', start)) != std::string::npos) {
    out += prefix;
    out.append(buf, start, nl - start + 1);
    if (copy_fd >= 0) raw.append(buf, start, nl - start + 1);
    start = nl + 1;
  }
  buf.erase(0, start);
  // A "line" this long without its end goes out as it is; so does an unfinished one at the end.
  if (buf.size() > 65536 || (eof && !buf.empty())) {
    out += prefix + buf + "\n";
    if (copy_fd >= 0) raw += buf + "\n";
    buf.clear();
  }
  if (eof) {
    ::close(fd);
    fd = -1;
  }
  if (copy_fd >= 0 && !raw.empty()) WriteAll(copy_fd, raw);
  return out;
}

std::vector<std::string> RankEnv(std::map<std::string, std::string> env,
                                 const std::vector<std::pair<std::string, std::string>>& extra, int rank, int np,
                                 const Placement& at, const std::string& store, const std::string& token) {
  for (auto& [k, v] : extra) env[k] = v;
  env["HOOP_RANK"] = std::to_string(rank);
  env["HOOP_SIZE"] = std::to_string(np);
  env["HOOP_LOCAL_RANK"] = std::to_string(at.local_rank);
  env["HOOP_LOCAL_SIZE"] = std::to_string(at.local_size);
  env["HOOP_CROSS_RANK"] = std::to_string(at.cross_rank);
  env["HOOP_CROSS_SIZE"] = std::to_string(at.cross_size);
  env["HOOP_STORE"] = store;
  env["HOOP_JOB_TOKEN"] = token;
  // torchrun's names for the same (scripts written for torchrun run unchanged; MASTER_ADDR and
  // MASTER_PORT come with `extra`, TorchrunJobEnv).
  env["RANK"] = std::to_string(rank);
  env["WORLD_SIZE"] = std::to_string(np);
  env["LOCAL_RANK"] = std::to_string(at.local_rank);
  env["LOCAL_WORLD_SIZE"] = std::to_string(at.local_size);
  std::vector<std::string> out;
  for (auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::pair<int, int> OutputFilesFor(const std::string& dir, int rank, size_t width) {
  if (dir.empty()) return {-1, -1};
  std::string n = std::to_string(rank);
  const std::string sub = dir + "/rank." + std::string(width > n.size() ? width - n.size() : 0, '0') + n;
  ::mkdir(dir.c_str(), 0755);
  ::mkdir(sub.c_str(), 0755);
  int o = ::open((sub + "/stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int e = ::open((sub + "/stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  return {o, e};
}

std::vector<std::string> NewcomerEnv(std::vector<std::string> env) {
  std::vector<std::string> out;
  for (std::string& kv : env)
    if (kv.rfind("HOOP_SIZE=", 0) != 0 && kv.rfind("RANK=", 0) != 0 && kv.rfind("WORLD_SIZE=", 0) != 0 &&
        kv.rfind("HOOP_JOIN=", 0) != 0)
      out.push_back(std::move(kv));
  out.push_back("HOOP_JOIN=1");
  return out;
}

std::vector<std::pair<std::string, std::string>> TorchrunJobEnv(
    const std::map<std::string, std::string>& base, const std::vector<std::pair<std::string, std::string>>& extra,
    const std::string& rank0_host) {
  auto given = [&](const std::string& k) {
    if (base.count(k)) return true;
    for (auto& [name, v] : extra)
      if (name == k) return true;
    return false;
  };
  std::vector<std::pair<std::string, std::string>> out;
  if (!given("MASTER_ADDR")) out.emplace_back("MASTER_ADDR", rank0_host);
  if (!given("MASTER_PORT")) {
    // A port free on every address here now (torch's store listens on all of them), below the
    // ephemeral range (FreePortBelowEphemeral); on another host, the same number, which is free
    // there too unless something holds it.
    int port = FreePortBelowEphemeral("0.0.0.0");
    if (port == 0) port = 29500;
    out.emplace_back("MASTER_PORT", std::to_string(port));
  }
  if (!given("PYTHONUNBUFFERED")) out.emplace_back("PYTHONUNBUFFERED", "1");
  return out;
}

StatusOr<std::vector<std::vector<int>>> BindRanks(BindTo bind_to, bool report, const std::vector<int>& ranks) {
  const int n = static_cast<int>(ranks.size());
  std::vector<std::vector<int>> none(ranks.size());
  if (bind_to == BindTo::kNone) return none;
  // I/O devices only where a GPU driver is there (their PCI discovery costs a scan): with GPUs,
  // ranks are placed near their own (common/topology.h).
  const bool gpus = ::access("/dev/nvidia0", F_OK) == 0 || ::access("/dev/kfd", F_OK) == 0;
  auto topo = LoadTopology(gpus);
  if (!topo.ok()) {
    if (bind_to == BindTo::kDefault) {
      if (report) std::fprintf(stderr, "hooprun: ranks not bound: %s\n", topo.status().message().c_str());
      return none;
    }
    return Status(topo.status().code(),
                  std::string("--bind-to ") + BindToName(bind_to) + ": " + topo.status().message());
  }
  const BindTo policy = bind_to == BindTo::kDefault ? DefaultBinding(*topo, n) : bind_to;
  HOOP_ASSIGN_OR_RETURN(auto sets, Bindings(*topo, n, policy));
  if (report)
    for (int i = 0; i < n; ++i) {
      const auto& cpus = sets[static_cast<size_t>(i)];
      const int r = ranks[static_cast<size_t>(i)];
      if (cpus.empty())
        std::fprintf(stderr, "hooprun: rank %d not bound (--bind-to %s)\n", r, BindToName(policy));
      else
        std::fprintf(stderr, "hooprun: rank %d bound to %s: cpus %s\n", r, BindToName(policy), CpuList(cpus).c_str());
    }
  return sets;
}

std::string DescribeExit(int st) {
  if (WIFEXITED(st)) return "exited with code " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st))
    return "was killed by signal " + std::to_string(WTERMSIG(st)) + " (" + ::strsignal(WTERMSIG(st)) + ")" +
           (WCOREDUMP(st) ? ", core dumped" : "");
  return "stopped";
}

bool ExitedCleanly(int st) { return WIFEXITED(st) && WEXITSTATUS(st) == 0; }

}  // namespace hoop::run
