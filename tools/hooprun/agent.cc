// hooprun --agent: a remote host's share of a job (remote.h says the protocol). It reads the
// plan, starts its ranks as hooprun starts local ones (ranks.h: own process group, death with
// the agent, binding, --wdir), relays their output prefixed "[host:rank]" and writes their
// --output-filename files on this host, reports each start and exit on control lines, and stops
// its ranks - SIGTERM, then SIGKILL 2 s later - when its stdin says so or closes.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "common/config.h"
#include "tools/hooprun/ranks.h"
#include "tools/hooprun/remote.h"
#include "tools/hooprun/group_leftovers.h"
#include "tools/hooprun/sentinel.h"
#include "tools/hooprun/shm_leftovers.h"

namespace hoop::run {
namespace {

using Clock = std::chrono::steady_clock;

// Everything, even when the reader is slow: the agent has nothing better to do than wait.
void WriteOut(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 100);
      continue;
    }
    if (n <= 0) return;  // hooprun is gone; stdin's end stops us
    done += static_cast<size_t>(n);
  }
}

void Control(const std::string& line) { WriteOut(STDOUT_FILENO, std::string(1, kControl) + line + "\n"); }

// "fail CODE WHY": the job cannot run here; hooprun exits with CODE.
int Fail(int code, const std::string& why) {
  Control("fail " + std::to_string(code) + " " + why);
  return code;
}

// The first line of stdin, waited for 30 s at most.
std::optional<std::string> ReadPlan() {
  std::string line;
  const auto until = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < until) {
    pollfd p{STDIN_FILENO, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char c;
    ssize_t n = ::read(STDIN_FILENO, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    if (c == '\n') return line;
    line += c;
    if (line.size() > (16u << 20)) return std::nullopt;
  }
  return std::nullopt;
}

BindTo BindFrom(const std::string& s) {
  if (s == "none") return BindTo::kNone;
  if (s == "core") return BindTo::kCore;
  if (s == "numa") return BindTo::kNuma;
  if (s == "socket") return BindTo::kSocket;
  if (s == "hwthread") return BindTo::kHwthread;
  return BindTo::kDefault;
}

}  // namespace

int RunAgent() {
  ::signal(SIGPIPE, SIG_IGN);
  const std::time_t began = std::time(nullptr);
  auto text = ReadPlan();
  if (!text) {
    return Fail(2, "no plan came on standard input");
  }
  nlohmann::json plan;
  try {
    plan = nlohmann::json::parse(*text);
  } catch (const std::exception& e) {
    return Fail(2, std::string("the plan is not JSON: ") + e.what());
  }
  std::string host, store, token, wdir, output_dir;
  std::vector<std::string> command;
  std::vector<std::pair<std::string, std::string>> extra;
  std::vector<int> ranks;
  std::vector<Placement> places;
  int np = 0;
  size_t width = 1;
  bool tag_output = false, report = false, join = false;
  BindTo bind_to = BindTo::kDefault;
  try {
    host = plan.at("host").get<std::string>();
    store = plan.at("store").get<std::string>();
    token = plan.at("token").get<std::string>();
    np = plan.at("np").get<int>();
    command = plan.at("command").get<std::vector<std::string>>();
    for (auto& kv : plan.at("env")) extra.emplace_back(kv.at(0).get<std::string>(), kv.at(1).get<std::string>());
    wdir = plan.value("wdir", "");
    output_dir = plan.value("output_dir", "");
    width = plan.value("width", size_t{1});
    tag_output = plan.value("tag_output", false);
    report = plan.value("report_bindings", false);
    join = plan.value("join", false);  // newcomers to a running job (elastic hooprun)
    bind_to = BindFrom(plan.value("bind_to", "default"));
    for (auto& r : plan.at("ranks")) {
      ranks.push_back(r.at("rank").get<int>());
      Placement p;
      p.host = host;
      p.local_rank = r.at("local_rank").get<int>();
      p.local_size = r.at("local_size").get<int>();
      p.cross_rank = r.at("cross_rank").get<int>();
      p.cross_size = r.at("cross_size").get<int>();
      places.push_back(p);
    }
  } catch (const std::exception& e) {
    return Fail(2, std::string("the plan lacks a field: ") + e.what());
  }
  if (command.empty() || ranks.empty()) {
    return Fail(2, "the plan has no command or no ranks");
  }
  // The program, found on this host as the ranks will look for it.
  const char* path = std::getenv("PATH");
  for (auto& [k, v] : extra)
    if (k == "PATH") path = v.c_str();
  const std::string& prog = command[0];
  const std::string checked =
      !wdir.empty() && prog.find('/') != std::string::npos && prog[0] != '/' ? wdir + "/" + prog : prog;
  std::string why;
  if (int code = CheckProgram(checked, path, &why)) return Fail(code, why);
  if (!wdir.empty()) {
    struct stat st {};
    if (::stat(wdir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Fail(2, "working folder " + wdir + ": " + (errno ? std::strerror(errno) : "not a folder") +
                         " (remote ranks start in hooprun's folder; --wdir names another)");
    }
  }
  auto bound = BindRanks(bind_to, report, ranks);
  if (!bound.ok()) {
    return Fail(2, bound.status().message());
  }
  Sentinel sentinel;
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&mask, s);
  ::sigprocmask(SIG_BLOCK, &mask, nullptr);
  const int sig_fd = ::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  ::fcntl(STDIN_FILENO, F_SETFL, ::fcntl(STDIN_FILENO, F_GETFL) | O_NONBLOCK);

  std::vector<Rank> procs;
  const auto base = ProcessEnvironment();
  for (size_t i = 0; i < ranks.size(); ++i) {
    auto env = RankEnv(base, extra, ranks[i], np, places[i], store, token);
    auto r = StartRank(ranks[i], command, join ? NewcomerEnv(std::move(env)) : env, (*bound)[i], wdir);
    if (!r.ok()) {
      for (auto& p : procs) ::kill(-p.pid, SIGKILL);
      return Fail(1, "cannot start rank " + std::to_string(ranks[i]) + ": " + r.status().message());
    }
    sentinel.Started(r->pid);
    std::tie(r->out_copy, r->err_copy) = OutputFilesFor(output_dir, ranks[i], width);
    Control("started " + std::to_string(ranks[i]) + " " + std::to_string(r->pid));
    procs.push_back(std::move(r).value());
  }

  bool stopping = false, termed = false, killed = false, input_open = true;
  Clock::time_point term_at;
  std::optional<Clock::time_point> all_exited_at;
  std::string commands;
  auto signal_all = [&](int sig) {
    for (auto& p : procs)
      if (!p.exited) ::kill(-p.pid, sig);
  };
  auto prefix = [&](int rank, const char* stream) {
    return "[" + host + ":" + std::to_string(rank) + "]" + (tag_output ? stream : " ");
  };
  while (true) {
    bool all_exited = true, open = false;
    for (auto& p : procs) {
      all_exited &= p.exited;
      open |= p.out_fd >= 0 || p.err_fd >= 0;
    }
    if (all_exited) {
      if (!open) break;
      if (!all_exited_at) all_exited_at = Clock::now();
      if (Clock::now() - *all_exited_at > std::chrono::seconds(1)) break;
    }
    std::vector<pollfd> fds{{sig_fd, POLLIN, 0}};
    if (input_open) fds.push_back({STDIN_FILENO, POLLIN, 0});
    for (auto& p : procs) {
      if (p.out_fd >= 0) fds.push_back({p.out_fd, POLLIN, 0});
      if (p.err_fd >= 0) fds.push_back({p.err_fd, POLLIN, 0});
    }
    ::poll(fds.data(), fds.size(), 100);
    signalfd_siginfo si;
    while (::read(sig_fd, &si, sizeof si) == static_cast<ssize_t>(sizeof si))
      if (si.ssi_signo != SIGCHLD && !termed) {
        stopping = termed = true;
        term_at = Clock::now();
        signal_all(SIGTERM);
      }
    if (input_open) {
      char buf[256];
      ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
      if (n > 0) commands.append(buf, static_cast<size_t>(n));
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        input_open = false;  // hooprun, or the connection, is gone: stop everything
        if (!termed) {
          stopping = termed = true;
          term_at = Clock::now();
          signal_all(SIGTERM);
        }
      }
      for (size_t nl; (nl = commands.find('\n')) != std::string::npos; commands.erase(0, nl + 1)) {
        const std::string c = commands.substr(0, nl);
        if (c == "kill") {
          signal_all(SIGKILL);
          killed = stopping = true;
        } else if (c.rfind("usr1", 0) == 0) {  // hooprun's SIGUSR1 for the ranks listed (trace_signal.h)
          std::istringstream listed(c.substr(4));
          for (int r; listed >> r;)
            for (auto& p : procs)
              if (p.rank == r && !p.exited) ::kill(p.pid, SIGUSR1);
        } else if (c == "term" && !termed) {
          stopping = termed = true;
          term_at = Clock::now();
          signal_all(SIGTERM);
        }
      }
    }
    for (auto& p : procs) {
      WriteOut(STDOUT_FILENO, Relay(p.out_fd, p.out_buf, prefix(p.rank, "<stdout>: "), p.out_copy));
      WriteOut(STDERR_FILENO, Relay(p.err_fd, p.err_buf, prefix(p.rank, "<stderr>: "), p.err_copy));
    }
    int st = 0;
    for (pid_t pid; (pid = ::waitpid(-1, &st, WNOHANG)) > 0;)
      for (auto& p : procs)
        if (p.pid == pid) {
          p.exited = true;
          sentinel.Reaped(pid);
          if (WIFSIGNALED(st))  // its UCX may have left a segment's file (shm_leftovers.h)
            for (const auto& name : RemoveUcxLeftovers(began))
              WriteOut(STDERR_FILENO, "removed /dev/shm/" + name + ", UCX's, which rank " + std::to_string(p.rank) +
                                          " left when killed\n");
          Control("exit " + std::to_string(p.rank) + " " + std::to_string(st));
        }
    if (stopping && termed && !killed && Clock::now() - term_at > std::chrono::seconds(2)) {
      signal_all(SIGKILL);
      killed = true;
    }
  }
  std::vector<std::pair<std::string, pid_t>> groups;
  for (const auto& p : procs) groups.emplace_back("rank " + std::to_string(p.rank), p.pid);
  for (const auto& line : StopLeftovers(groups)) WriteOut(STDERR_FILENO, line + "\n");
  for (auto& p : procs) {
    if (p.out_copy >= 0) ::close(p.out_copy);
    if (p.err_copy >= 0) ::close(p.err_copy);
  }
  sentinel.Done();
  return 0;
}

}  // namespace hoop::run
