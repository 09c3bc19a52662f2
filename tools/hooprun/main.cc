// hooprun: an hvdrun/mpirun-style launcher for hoop jobs on one host.
//
// It serves the job's TCP store (in a thread), starts N ranks, relays their output line by line
// with a rank prefix (through writer threads, output.h, so a reader that stops reading never
// stops hooprun), and watches them from one poll loop (signalfd for SIGCHLD, SIGINT and
// SIGTERM). Stopping is one path for every cause - a rank failed, the --timeout passed, Ctrl-C:
// a short grace period for the other ranks to report their own errors, then SIGTERM to every
// rank's process group, then SIGKILL. hooprun exits only when every rank is reaped; if hooprun
// itself is killed, its sentinel (sentinel.h) kills what is left of every rank's group.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "collectives/stall.h"
#include "common/config.h"
#include "common/deadline.h"
#include "common/version.h"
#include "tools/hooprun/options.h"
#include "tools/hooprun/output.h"
#include "tools/hooprun/ranks.h"
#include "tools/hooprun/sentinel.h"
#include "transport/shm/segment.h"
#include "transport/tcp_store.h"

namespace hoop::run {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kGrace = std::chrono::seconds(2);    // for the other ranks to report a failure
constexpr auto kTermWait = std::chrono::seconds(2); // between SIGTERM and SIGKILL

std::string NewToken() {
  unsigned char raw[16];
  if (::getrandom(raw, sizeof(raw), 0) != static_cast<ssize_t>(sizeof(raw))) {
    std::perror("hooprun: getrandom");
    std::exit(1);
  }
  static const char* hex = "0123456789abcdef";
  std::string t;
  for (unsigned char c : raw) {
    t += hex[c >> 4];
    t += hex[c & 15];
  }
  return t;
}

std::vector<std::string> RankEnv(const Options& o, int rank, const Placement& at, int port, const std::string& token) {
  std::map<std::string, std::string> env = ProcessEnvironment();
  for (auto& [k, v] : o.env) env[k] = v;
  env["HOOP_RANK"] = std::to_string(rank);
  env["HOOP_SIZE"] = std::to_string(o.np);
  env["HOOP_LOCAL_RANK"] = std::to_string(at.local_rank);
  env["HOOP_LOCAL_SIZE"] = std::to_string(at.local_size);
  env["HOOP_CROSS_RANK"] = std::to_string(at.cross_rank);
  env["HOOP_CROSS_SIZE"] = std::to_string(at.cross_size);
  env["HOOP_STORE"] = "tcp://127.0.0.1:" + std::to_string(port);
  env["HOOP_JOB_TOKEN"] = token;
  std::vector<std::string> out;
  for (auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

// The hosts (-H, --hostfile, or this one with -np slots) and every rank's place on them; sets
// opts.np where hosts gave it. Hosts other than this one are refused: ranks start here only.
StatusOr<std::vector<Placement>> PlanRanks(Options& opts) {
  std::vector<HostSlots> hosts;
  if (!opts.hostfile.empty()) {
    std::ifstream f(opts.hostfile);
    if (!f) return InvalidArgument("--hostfile " + opts.hostfile + ": cannot read it (" + std::strerror(errno) + ")");
    std::stringstream text;
    text << f.rdbuf();
    HOOP_ASSIGN_OR_RETURN(hosts, ParseHostfile(text.str(), opts.hostfile));
  } else if (!opts.hosts.empty()) {
    HOOP_ASSIGN_OR_RETURN(hosts, ParseHostList(opts.hosts));
  } else {
    hosts.push_back({"localhost", opts.np});
  }
  char self[256] = {0};
  if (::gethostname(self, sizeof self - 1) != 0) self[0] = '\0';
  for (const HostSlots& h : hosts)
    if (!IsThisHost(h.host, self))
      return Unimplemented("host '" + h.host + "' is not this host (" + self +
                           "): starting ranks on other hosts over ssh is not built yet; list this host only "
                           "(localhost), or start the job with mpirun or Slurm");
  if (hosts.size() > 1)  // two names for one machine would split its ranks into two "hosts"
    return InvalidArgument("hosts '" + hosts[0].host + "' and '" + hosts[1].host + "' are both this host (" + self +
                           "): list it once, with all its slots");
  HOOP_ASSIGN_OR_RETURN(auto placed, PlaceRanks(hosts, opts.np, opts.map_by));
  opts.np = static_cast<int>(placed.size());
  return placed;
}

// --output-filename DIR: DIR/rank.N/stdout and stderr for every rank (N zero-padded to the
// width of the last rank, so the folders sort in rank order), truncated; (-1, -1) each without it.
StatusOr<std::vector<std::pair<int, int>>> OutputFiles(const Options& opts) {
  std::vector<std::pair<int, int>> fds(static_cast<size_t>(opts.np), {-1, -1});
  if (opts.output_dir.empty()) return fds;
  const size_t width = std::to_string(opts.np - 1).size();
  auto make = [](const std::string& dir) {
    return ::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST;
  };
  if (!make(opts.output_dir))
    return InvalidArgument("--output-filename " + opts.output_dir + ": cannot create it (" + std::strerror(errno) + ")");
  for (int r = 0; r < opts.np; ++r) {
    std::string n = std::to_string(r);
    const std::string dir = opts.output_dir + "/rank." + std::string(width - n.size(), '0') + n;
    if (!make(dir)) return InvalidArgument("--output-filename: cannot create " + dir + " (" + std::strerror(errno) + ")");
    for (int k = 0; k < 2; ++k) {
      const std::string file = dir + (k == 0 ? "/stdout" : "/stderr");
      int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) return InvalidArgument("--output-filename: cannot write " + file + " (" + std::strerror(errno) + ")");
      (k == 0 ? fds[static_cast<size_t>(r)].first : fds[static_cast<size_t>(r)].second) = fd;
    }
  }
  return fds;
}

// --verbose: what hooprun is about to do, before it does it. The job token is never printed.
void PrintPlan(const Options& opts, const std::vector<Placement>& placed, const std::vector<std::vector<int>>& bound,
               int port) {
  std::string command;
  for (const std::string& a : opts.command) command += (command.empty() ? "" : " ") + a;
  std::map<std::string, int> per_host;
  for (const Placement& p : placed) ++per_host[p.host];
  std::fprintf(stderr, "hooprun: plan: %d rank%s on %zu host%s; store tcp://127.0.0.1:%d (job token not shown)\n",
               opts.np, opts.np == 1 ? "" : "s", per_host.size(), per_host.size() == 1 ? "" : "s", port);
  for (size_t r = 0; r < placed.size(); ++r) {
    const Placement& p = placed[r];
    std::fprintf(stderr, "hooprun: rank %zu: host %s, local rank %d of %d, cross rank %d of %d, %s%s: %s%s%s\n", r,
                 p.host.c_str(), p.local_rank, p.local_size, p.cross_rank, p.cross_size,
                 bound[r].empty() ? "not bound" : "cpus ", bound[r].empty() ? "" : CpuList(bound[r]).c_str(),
                 command.c_str(), opts.wdir.empty() ? "" : " in ", opts.wdir.c_str());
  }
}

// Where each rank is bound (--bind-to, common/topology.h), said with --report-bindings. Without
// hwloc nothing is bound, and asking for a binding is an error.
StatusOr<std::vector<std::vector<int>>> BindRanks(const Options& opts) {
  std::vector<std::vector<int>> none(static_cast<size_t>(opts.np));
  if (opts.bind_to == BindTo::kNone) return none;
  auto topo = LoadTopology(false);
  if (!topo.ok()) {
    if (opts.bind_to == BindTo::kDefault) {
      if (opts.report_bindings) std::fprintf(stderr, "hooprun: ranks not bound: %s\n", topo.status().message().c_str());
      return none;
    }
    return Status(topo.status().code(), std::string("--bind-to ") + BindToName(opts.bind_to) + ": " + topo.status().message());
  }
  const BindTo policy = opts.bind_to == BindTo::kDefault ? DefaultBinding(*topo, opts.np) : opts.bind_to;
  HOOP_ASSIGN_OR_RETURN(auto sets, Bindings(*topo, opts.np, policy));
  if (opts.report_bindings)
    for (int r = 0; r < opts.np; ++r) {
      const auto& cpus = sets[static_cast<size_t>(r)];
      if (cpus.empty()) std::fprintf(stderr, "hooprun: rank %d not bound (--bind-to %s)\n", r, BindToName(policy));
      else std::fprintf(stderr, "hooprun: rank %d bound to %s: cpus %s\n", r, BindToName(policy), CpuList(cpus).c_str());
    }
  return sets;
}

class Job {
 public:
  Job(const Options& o, std::vector<Rank> ranks, const TcpStoreServer& store, Sentinel& sentinel, Writer& out,
      Writer& err)
      : o_(o), ranks_(std::move(ranks)), store_(store), sentinel_(sentinel), out_(out), err_(err) {}

  int Run(int sig_fd) {
    const auto start = Clock::now();
    while (!AllDone()) {
      std::vector<pollfd> fds{{sig_fd, POLLIN, 0}};
      // A writer with a backlog (its reader is slow or stopped): leave the ranks' pipes unread,
      // so the ranks wait for the reader, while this loop goes on answering signals and timeouts.
      const bool relay = !out_.Full() && !err_.Full();
      for (auto& r : ranks_) {
        if (!relay) break;
        if (r.out_fd >= 0) fds.push_back({r.out_fd, POLLIN, 0});
        if (r.err_fd >= 0) fds.push_back({r.err_fd, POLLIN, 0});
      }
      ::poll(fds.data(), fds.size(), 100);
      if (fds[0].revents & POLLIN) HandleSignals(sig_fd);
      for (auto& r : ranks_) {
        if (!relay) break;
        out_.Write(Relay(r.out_fd, r.out_buf, Prefix(r.rank, "<stdout>: "), r.out_copy));
        err_.Write(Relay(r.err_fd, r.err_buf, Prefix(r.rank, "<stderr>: "), r.err_copy));
      }
      Reap();
      if (o_.timeout_s > 0 && !stopping_ &&
          Clock::now() - start > std::chrono::duration<double>(o_.timeout_s)) {
        reason_ = "the job ran past --timeout " + std::to_string(static_cast<int>(o_.timeout_s)) + " s";
        exit_code_ = 124;
        BeginStop(false);
      }
      Escalate();
    }
    ExplainFailure();
    if (!reason_.empty()) err_.Write("hooprun: " + reason_ + "\n");
    return exit_code_;
  }

  // Waits for the output to be written. After --timeout or an interrupt, or on a new signal
  // meanwhile, only while the reader keeps taking data (2 s without progress: the rest is
  // abandoned; false).
  bool Flush(int sig_fd) {
    bool hurry = exit_code_ == 124 || exit_code_ == 129 || exit_code_ == 130 || exit_code_ == 143;
    while (!(out_.Drained(std::chrono::milliseconds(50)) && err_.Drained(std::chrono::milliseconds(50)))) {
      pollfd p{sig_fd, POLLIN, 0};
      if (::poll(&p, 1, 0) > 0) {
        signalfd_siginfo si;
        while (::read(sig_fd, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si)))
          hurry |= si.ssi_signo != SIGCHLD;
      }
      if (hurry && std::max(out_.Stalled(), err_.Stalled()) > std::chrono::seconds(2)) return false;
    }
    return true;
  }

 private:
  std::string Prefix(int rank, const char* stream) const {
    std::string p("[");
    p.append(std::to_string(rank));
    p.append("]");
    p.append(o_.tag_output ? stream : " ");
    return p;
  }

  bool AllDone() {
    bool all_exited = true;
    for (auto& r : ranks_) all_exited &= r.exited;
    if (!all_exited) return false;
    // Output still buffered in pipes is relayed first; a grandchild holding a pipe open does
    // not keep hooprun alive for more than a second.
    bool open = false;
    for (auto& r : ranks_) open |= r.out_fd >= 0 || r.err_fd >= 0;
    if (!open) return true;
    if (!all_exited_at_) all_exited_at_ = Clock::now();
    return Clock::now() - *all_exited_at_ > std::chrono::seconds(1);
  }

  void HandleSignals(int sig_fd) {
    signalfd_siginfo si;
    while (::read(sig_fd, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si))) {
      if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM || si.ssi_signo == SIGHUP) {
        if (!stopping_) {
          reason_ = std::string("interrupted by ") + ::strsignal(static_cast<int>(si.ssi_signo)) + "; stopped every rank";
          exit_code_ = 128 + static_cast<int>(si.ssi_signo);  // as a shell reports it: 130, 143, 129
        }
        BeginStop(true);
      }
    }
  }

  void Reap() {
    int st = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &st, WNOHANG)) > 0) {
      for (auto& r : ranks_) {
        if (r.pid != pid) continue;
        r.exited = true;
        r.wait_status = st;
        sentinel_.Reaped(r.pid);
        if (ExitedCleanly(st)) continue;
        if (!termed_) failed_.push_back(&r);  // failed on its own, not because we stopped it
        BeginStop(false);
      }
    }
  }

  // The ranks that timed out name the one that stopped making progress in the store
  // (collectives/stall.h): "hoop/<comm>/stalled/<rank that timed out>" = its verdict.
  bool ExplainStall() {
    std::set<int> stalled, waiters;
    for (const auto& [key, value] : store_.Find("/stalled/")) {
      std::vector<int> ranks;
      if (!ParseRankList(value, &ranks)) continue;
      stalled.insert(ranks.begin(), ranks.end());
      waiters.insert(std::atoi(key.substr(key.rfind('/') + 1).c_str()));
    }
    if (stalled.empty()) return false;
    std::string who, by;
    for (int r : stalled) {
      const Rank* rank = r >= 0 && r < static_cast<int>(ranks_.size()) ? &ranks_[static_cast<size_t>(r)] : nullptr;
      who += (who.empty() ? "rank " : ", rank ") + std::to_string(r) +
             (rank ? " (pid " + std::to_string(rank->pid) + ")" : std::string());
    }
    for (int r : waiters) by += (by.empty() ? "" : ", ") + std::to_string(r);
    reason_ = who + " stopped making progress (rank" + (waiters.size() > 1 ? "s " : " ") + by +
              " timed out waiting for " + (stalled.size() > 1 ? "them" : "it") + "); stopped the other ranks";
    return true;
  }

  // The line that says why the job failed. A rank's death makes its peers fail within
  // milliseconds, so the order in which exits are reaped does not tell cause from effect: a rank
  // killed by a signal is the likelier cause than one that exited with an error. Ranks that timed
  // out because another stopped making progress say which one (ExplainStall).
  void ExplainFailure() {
    if (failed_.empty()) return;
    if (exit_code_ == 0 && reason_.empty() && ExplainStall()) {
      int st = failed_.front()->wait_status;
      exit_code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      return;
    }
    const Rank* cause = failed_.front();
    for (const Rank* r : failed_)
      if (WIFSIGNALED(r->wait_status)) {
        cause = r;
        break;
      }
    int st = cause->wait_status;
    if (exit_code_ == 0 || exit_code_ == 124) {
      if (exit_code_ == 0) exit_code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      if (reason_.empty())
        reason_ = "rank " + std::to_string(cause->rank) + " (pid " + std::to_string(cause->pid) + ") " +
                  DescribeExit(st) + "; stopped the other ranks";
    }
  }

  void BeginStop(bool now) {
    if (!stopping_) {
      stopping_ = true;
      stop_at_ = Clock::now();
    }
    if (now && !termed_) {
      Signal(SIGTERM);
      termed_ = true;
      term_at_ = Clock::now();
    }
  }

  void Escalate() {
    if (!stopping_) return;
    auto t = Clock::now();
    if (!termed_ && t - stop_at_ > kGrace) {
      Signal(SIGTERM);
      termed_ = true;
      term_at_ = t;
    }
    if (termed_ && !killed_ && t - term_at_ > kTermWait) {
      Signal(SIGKILL);
      killed_ = true;
    }
  }

  void Signal(int sig) {
    for (auto& r : ranks_)
      if (!r.exited) ::kill(-r.pid, sig);
  }

  const Options& o_;
  std::vector<Rank> ranks_;
  const TcpStoreServer& store_;
  Sentinel& sentinel_;
  Writer &out_, &err_;
  bool stopping_ = false, termed_ = false, killed_ = false;
  Clock::time_point stop_at_, term_at_;
  std::optional<Clock::time_point> all_exited_at_;
  std::vector<const Rank*> failed_;
  std::string reason_;
  int exit_code_ = 0;
};

// More ranks than cores: a warning (unless --oversubscribe). A job that cannot work, refused:
// shm rings beyond this host's memory, or more than kMaxRanksPerCore ranks per core.
bool CheckCrowding(const Options& o) {
  constexpr int kMaxRanksPerCore = 64;
  cpu_set_t set;
  CPU_ZERO(&set);
  const int cores = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  const double rings = static_cast<double>(o.np) * (o.np - 1) * static_cast<double>(shm::RingBytes());
  const double memory = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  char line[512];
  if (rings > memory) {
    std::snprintf(line, sizeof line, "hooprun: -np %d: the shared-memory rings between every pair of ranks would need "
                  "%.1f GB (N x (N-1) x %zu KiB), more than this host's %.1f GB\n",
                  o.np, rings / 1e9, shm::RingBytes() / 1024, memory / 1e9);
    std::fputs(line, stderr);
    return false;
  }
  if (o.np > kMaxRanksPerCore * cores) {
    std::fprintf(stderr, "hooprun: -np %d on %d core%s: more than %d ranks per core is not supported (ranks that wait "
                 "long for a core are taken for lost peers); use at most %d\n",
                 o.np, cores, cores == 1 ? "" : "s", kMaxRanksPerCore, kMaxRanksPerCore * cores);
    return false;
  }
  if (o.np > cores && !o.oversubscribe)
    std::fprintf(stderr, "hooprun: warning: %d ranks on %d core%s (oversubscribed): ranks share cores and wait for "
                 "each other's turns; shm rings take up to %.0f MB (--oversubscribe: no warning)\n",
                 o.np, cores, cores == 1 ? "" : "s", rings / 1e6);
  return true;
}

}  // namespace
}  // namespace hoop::run

int main(int argc, char** argv) {
  using namespace hoop::run;
  auto opts = ParseOptions(argc, argv);
  if (!opts.ok()) {
    std::fprintf(stderr, "hooprun: %s\n(run 'hooprun --help' for usage)\n", opts.status().message().c_str());
    return 2;
  }
  if (opts->help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (opts->version) {
    std::printf("%s\n", hoop::VersionLine("hooprun").c_str());
    return 0;
  }
  // Where every rank goes: -H or --hostfile, else -np ranks on this host.
  auto placed = PlanRanks(*opts);
  if (!placed.ok()) {
    std::fprintf(stderr, "hooprun: %s\n", placed.status().message().c_str());
    return 2;
  }
  // --output-filename: every rank's files, made before anything starts.
  auto copies = OutputFiles(*opts);
  if (!copies.ok()) {
    std::fprintf(stderr, "hooprun: %s\n", copies.status().message().c_str());
    return 2;
  }
  // Each rank's processors (all ranks are on this host).
  auto bound = BindRanks(*opts);
  if (!bound.ok()) {
    std::fprintf(stderr, "hooprun: %s\n", bound.status().message().c_str());
    return 2;
  }
  // Once for the job, before anything starts (the ranks' PATH: -x PATH=... if given).
  const char* path = std::getenv("PATH");
  for (auto& [k, v] : opts->env)
    if (k == "PATH") path = v.c_str();
  std::string why;
  if (!opts->wdir.empty()) {
    struct stat st {};
    const bool there = ::stat(opts->wdir.c_str(), &st) == 0;
    if (!there || !S_ISDIR(st.st_mode)) {
      std::fprintf(stderr, "hooprun: --wdir %s: %s\n", opts->wdir.c_str(), there ? "not a folder" : std::strerror(errno));
      return 2;
    }
  }
  // A relative path with a '/' is found from where the ranks will run.
  const std::string& prog = opts->command[0];
  const std::string checked = !opts->wdir.empty() && prog.find('/') != std::string::npos && prog[0] != '/'
                                  ? opts->wdir + "/" + prog : prog;
  if (int code = CheckProgram(checked, path, &why)) {
    std::fprintf(stderr, "hooprun: %s\n", why.c_str());
    return code;
  }
  if (!CheckCrowding(*opts)) return 2;
  // First, before any thread or descriptor of the job exists: the process that cleans up if
  // hooprun is killed.
  Sentinel sentinel;
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&mask, s);
  ::sigprocmask(SIG_BLOCK, &mask, nullptr);
  int sig_fd = ::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  ::signal(SIGPIPE, SIG_IGN);

  std::string token = NewToken();
  auto server = hoop::TcpStoreServer::Start("127.0.0.1", 0, token);
  if (!server.ok()) {
    std::fprintf(stderr, "hooprun: cannot start the store: %s\n", server.status().message().c_str());
    return 1;
  }
  if (opts->verbose) PrintPlan(*opts, *placed, *bound, (*server)->port());
  std::vector<Rank> ranks;
  for (int r = 0; r < opts->np; ++r) {
    auto rank = StartRank(r, opts->command, RankEnv(*opts, r, (*placed)[static_cast<size_t>(r)], (*server)->port(), token),
                          (*bound)[static_cast<size_t>(r)], opts->wdir);
    if (!rank.ok()) {
      std::fprintf(stderr, "hooprun: cannot start rank %d: %s\n", r, rank.status().message().c_str());
      for (auto& k : ranks) ::kill(-k.pid, SIGKILL);
      return 1;
    }
    sentinel.Started(rank->pid);
    if (opts->verbose) std::fprintf(stderr, "hooprun: started rank %d (pid %d)\n", r, static_cast<int>(rank->pid));
    rank->out_copy = (*copies)[static_cast<size_t>(r)].first;
    rank->err_copy = (*copies)[static_cast<size_t>(r)].second;
    ranks.push_back(std::move(rank).value());
  }
  Writer out(STDOUT_FILENO), err(STDERR_FILENO);
  Job job(*opts, std::move(ranks), **server, sentinel, out, err);
  const int code = job.Run(sig_fd);
  // Every rank is reaped. Output a stopped reader never takes is abandoned, and with it the
  // writer threads stuck in write(): exit without waiting for them.
  if (!job.Flush(sig_fd)) {
    sentinel.Done();
    std::_Exit(code);
  }
  return code;
}
