// hooprun: an hvdrun/mpirun-style launcher for hoop jobs, on this host and on others over ssh.
//
// It serves the job's TCP store (in a thread), starts N ranks, relays their output line by line
// with a rank prefix (through writer threads, output.h, so a reader that stops reading never
// stops hooprun), and watches them from one poll loop (signalfd for SIGCHLD, SIGINT and
// SIGTERM). Stopping is one path for every cause - a rank failed, the --timeout passed, Ctrl-C:
// a short grace period for the other ranks to report their own errors, then SIGTERM to every
// rank's process group, then SIGKILL. hooprun exits only when every rank is reaped; if hooprun
// itself is killed, its sentinel (sentinel.h) kills what is left of every rank's group.
// Ranks on other hosts run under one agent per host, reached over ssh (remote.h): the loop reads
// the agents' output and control lines as it reads local ranks' pipes, and stopping reaches them
// through the agents' standard input (and, last, by killing their ssh).
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
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "collectives/core/stall.h"
#include "common/config.h"
#include "common/deadline.h"
#include "common/version.h"
#include "tools/hooprun/discovery.h"
#include "tools/hooprun/elastic.h"
#include "tools/hooprun/job.h"
#include "tools/hooprun/options.h"
#include "tools/hooprun/output.h"
#include "tools/hooprun/ranks.h"
#include "tools/hooprun/remote.h"
#include "tools/hooprun/sentinel.h"
#include "tools/hooprun/status.h"
#include "transport/shm/segment.h"
#include "transport/store/tcp_store.h"

namespace hoop::run {
namespace {

// HOOP_TRACE_DIR for the ranks: --output-filename's folder (absolute: a rank may start
// elsewhere, --wdir), where neither this shell nor -x set it.
std::optional<std::pair<std::string, std::string>> TraceDirEnv(
    const std::map<std::string, std::string>& base, const std::vector<std::pair<std::string, std::string>>& env,
    const std::string& output_dir) {
  if (output_dir.empty() || base.count("HOOP_TRACE_DIR")) return std::nullopt;
  for (const auto& kv : env)
    if (kv.first == "HOOP_TRACE_DIR") return std::nullopt;
  std::error_code ec;
  const auto abs = std::filesystem::absolute(output_dir, ec);
  return std::make_pair(std::string("HOOP_TRACE_DIR"), ec ? output_dir : abs.string());
}

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

// Where the job runs: every rank's place, whether its host is this one, and the other hosts in
// the order they were listed (each gets an agent over ssh).
struct JobPlan {
  std::vector<Placement> placed;
  std::vector<bool> here;
  std::vector<std::string> remote;
  std::vector<HostSlots> hosts;        // with their slots (at least the ranks placed there)
  std::string self;                    // this host's name as gethostname says
  std::vector<std::string> addresses;  // this host's addresses
};

// The hosts (-H, --hostfile, or this one with -np slots) and every rank's place on them; sets
// opts.np where hosts gave it.
StatusOr<JobPlan> PlanRanks(Options& opts) {
  std::vector<HostSlots> hosts;
  if (!opts.hostfile.empty()) {
    std::ifstream f(opts.hostfile);
    if (!f) return InvalidArgument("--hostfile " + opts.hostfile + ": cannot read it (" + std::strerror(errno) + ")");
    std::stringstream text;
    text << f.rdbuf();
    HOOP_ASSIGN_OR_RETURN(hosts, ParseHostfile(text.str(), opts.hostfile));
  } else if (!opts.hosts.empty()) {
    HOOP_ASSIGN_OR_RETURN(hosts, ParseHostList(opts.hosts));
  } else if (!opts.discovery_script.empty()) {  // an elastic job's first hosts
    HOOP_ASSIGN_OR_RETURN(hosts, DiscoverNow(opts.discovery_script, opts.slots_per_host));
    if (hosts.empty()) return InvalidArgument("--host-discovery-script '" + opts.discovery_script + "' listed no host");
    if (opts.np == 0) opts.np = AimedRanks(hosts, opts.max_np);
  } else {
    hosts.push_back({"localhost", opts.np ? opts.np : std::max(opts.npernode, 1)});
  }
  // mpirun's -N/--npernode: that many ranks on every host, whatever slots they were given.
  if (opts.npernode > 0)
    for (HostSlots& h : hosts) h.slots = opts.npernode;
  char self[256] = {0};
  if (::gethostname(self, sizeof self - 1) != 0) self[0] = '\0';
  const auto addresses = LocalAddresses();
  std::string here;
  for (const HostSlots& h : hosts) {
    if (!IsThisHost(h.host, self, addresses)) continue;
    if (!here.empty())  // two names for one machine would split its ranks into two "hosts"
      return InvalidArgument("hosts '" + here + "' and '" + h.host + "' are both this host (" + self +
                             "): list it once, with all its slots");
    here = h.host;
  }
  JobPlan plan;
  HOOP_ASSIGN_OR_RETURN(plan.placed, PlaceRanks(hosts, opts.np, opts.map_by, opts.oversubscribe));
  opts.np = static_cast<int>(plan.placed.size());
  for (const Placement& p : plan.placed) {
    plan.here.push_back(p.host == here);
    if (p.host != here && std::find(plan.remote.begin(), plan.remote.end(), p.host) == plan.remote.end())
      plan.remote.push_back(p.host);
  }
  for (HostSlots& h : hosts)
    for (const Placement& p : plan.placed)
      if (p.host == h.host) h.slots = std::max(h.slots, p.local_size);
  plan.hosts = std::move(hosts);
  plan.self = self;
  plan.addresses = addresses;
  if (opts.elastic()) {  // --min-np and --max-np default to -np (no bound but the slots with a script)
    if (opts.min_np == 0) opts.min_np = opts.np;
    if (opts.min_np > opts.np)
      return InvalidArgument("--min-np " + std::to_string(opts.min_np) + " is more than the " +
                             std::to_string(opts.np) + " ranks the job starts with");
    if (opts.max_np == 0 && opts.discovery_script.empty()) opts.max_np = opts.np;
  }
  return plan;
}

// --output-filename DIR: DIR/rank.N/stdout and stderr for every rank (N zero-padded to the
// width of the last rank, so the folders sort in rank order), truncated; (-1, -1) each without it.
// Ranks on other hosts have theirs written there, by their agent.
StatusOr<std::vector<std::pair<int, int>>> OutputFiles(const Options& opts, const std::vector<bool>& here) {
  std::vector<std::pair<int, int>> fds(static_cast<size_t>(opts.np), {-1, -1});
  if (opts.output_dir.empty()) return fds;
  const size_t width = std::to_string(opts.np - 1).size();
  auto make = [](const std::string& dir) { return ::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST; };
  if (!make(opts.output_dir))
    return InvalidArgument("--output-filename " + opts.output_dir + ": cannot create it (" + std::strerror(errno) +
                           ")");
  for (int r = 0; r < opts.np; ++r) {
    if (!here[static_cast<size_t>(r)]) continue;  // its host's agent writes them there
    std::string n = std::to_string(r);
    const std::string dir = opts.output_dir + "/rank." + std::string(width - n.size(), '0') + n;
    if (!make(dir))
      return InvalidArgument("--output-filename: cannot create " + dir + " (" + std::strerror(errno) + ")");
    for (int k = 0; k < 2; ++k) {
      const std::string file = dir + (k == 0 ? "/stdout" : "/stderr");
      int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) return InvalidArgument("--output-filename: cannot write " + file + " (" + std::strerror(errno) + ")");
      (k == 0 ? fds[static_cast<size_t>(r)].first : fds[static_cast<size_t>(r)].second) = fd;
    }
  }
  return fds;
}

// An argument as --verbose shows it: a long one (hoop.run's call travels base64 in pieces of
// 96 KiB, once per rank line) by its start and its length.
std::string Shown(const std::string& a) {
  constexpr size_t kLong = 200, kKept = 48;
  if (a.size() <= kLong) return a;
  return a.substr(0, kKept) + "...(" + std::to_string(a.size()) + " characters)";
}

// --verbose: what hooprun is about to do, before it does it. The job token is never printed.
void PrintPlan(const Options& opts, const JobPlan& plan, const std::vector<std::vector<int>>& bound,
               const std::string& store) {
  std::string command;
  for (const std::string& a : opts.command) command += (command.empty() ? "" : " ") + Shown(a);
  std::map<std::string, int> per_host;
  for (const Placement& p : plan.placed) ++per_host[p.host];
  std::fprintf(stderr, "hooprun: plan: %d rank%s on %zu host%s; store %s (job token not shown)\n", opts.np,
               opts.np == 1 ? "" : "s", per_host.size(), per_host.size() == 1 ? "" : "s", store.c_str());
  for (const std::string& h : plan.remote) {
    std::string ssh;
    for (const std::string& a : SshCommand(opts.ssh, h, "exec <this hooprun> --agent", 10)) ssh += " " + a;
    std::fprintf(stderr, "hooprun: host %s: %d rank%s through an agent started by:%s\n", h.c_str(), per_host[h],
                 per_host[h] == 1 ? "" : "s", ssh.c_str());
  }
  for (size_t r = 0; r < plan.placed.size(); ++r) {
    const Placement& p = plan.placed[r];
    const bool here = plan.here[r];
    std::fprintf(stderr, "hooprun: rank %zu: host %s, local rank %d of %d, cross rank %d of %d, %s%s: %s%s%s\n", r,
                 p.host.c_str(), p.local_rank, p.local_size, p.cross_rank, p.cross_size,
                 !here              ? "bound there"
                 : bound[r].empty() ? "not bound"
                                    : "cpus ",
                 here && !bound[r].empty() ? CpuList(bound[r]).c_str() : "", command.c_str(),
                 opts.wdir.empty() ? "" : " in ", opts.wdir.c_str());
  }
}

// The plan an agent reads (remote.h): its ranks on `host` (job rank and place) and everything
// they need; `join`: newcomers to the running job (elastic). Holds the job token: it goes to the
// agent on ssh's standard input only.
std::string AgentPlan(const Options& o, const std::vector<std::pair<int, Placement>>& ranks, const std::string& host,
                      const std::string& store, const std::string& token, const std::string& wdir, bool join = false) {
  nlohmann::json j;
  j["host"] = host;
  j["store"] = store;
  j["token"] = token;
  j["np"] = o.np;
  j["command"] = o.command;
  j["env"] = nlohmann::json::array();
  for (auto& [k, v] : o.env) j["env"].push_back({k, v});
  j["wdir"] = wdir;
  j["output_dir"] = o.output_dir;
  j["width"] = std::to_string(o.np - 1).size();
  j["tag_output"] = o.tag_output;
  j["report_bindings"] = o.report_bindings;
  j["bind_to"] = join ? "none" : BindToName(o.bind_to);  // newcomers: not bound
  j["join"] = join;
  j["ranks"] = nlohmann::json::array();
  for (const auto& [r, p] : ranks) {
    j["ranks"].push_back({{"rank", r},
                          {"local_rank", p.local_rank},
                          {"local_size", p.local_size},
                          {"cross_rank", p.cross_rank},
                          {"cross_size", p.cross_size}});
  }
  return j.dump();
}

// How an elastic job starts a newcomer (job.h's Spawner): on this host as any rank, with
// NewcomerEnv's variables and not bound; on another through an agent of its own, which needs a
// store the other hosts reach.
Spawner MakeSpawner(const Options& o, const JobPlan& plan, const std::map<std::string, std::string>& base,
                    const std::string& store, const std::string& token, bool store_reachable) {
  Spawner s;
  const size_t width = std::to_string(std::max(o.np, o.max_np) - 1).size();
  s.here = [&o, base, store, token, width](int rank, int local, int local_size) -> StatusOr<Rank> {
    const Placement at{"", local, local_size, 0, 1};
    auto r = StartRank(rank, o.command, NewcomerEnv(RankEnv(base, o.env, rank, o.np, at, store, token)), {}, o.wdir);
    if (r.ok()) std::tie(r->out_copy, r->err_copy) = OutputFilesFor(o.output_dir, rank, width);
    return r;
  };
  char self[4096] = {0}, cwd[4096] = {0};
  const bool found = ::readlink("/proc/self/exe", self, sizeof self - 1) > 0 && ::getcwd(cwd, sizeof cwd);
  const std::string path = self, folder = o.wdir.empty() ? cwd : o.wdir;
  s.there = [&o, found, path, folder, store, token, store_reachable](int rank, const std::string& host, int local,
                                                                     int local_size) -> StatusOr<Agent> {
    if (!store_reachable)
      return FailedPrecondition(
          "the job's store listens on 127.0.0.1 (every host was this one when the job started): give "
          "--store-address or --network-interface, so that hosts added later reach it");
    if (!found) return Internal("hooprun cannot find its own path or folder");
    const std::vector<std::pair<int, Placement>> ranks = {{rank, Placement{host, local, local_size, 0, 1}}};
    return StartAgent(host, o.ssh, path, AgentPlan(o, ranks, host, store, token, folder, true));
  };
  s.is_here = [self = plan.self, addresses = plan.addresses](const std::string& host) {
    return IsThisHost(host, self, addresses);
  };
  return s;
}

// More ranks than cores: a warning (unless --oversubscribe). A job that cannot work, refused:
// shm rings beyond this host's memory, or more than kMaxRanksPerCore ranks per core.
bool CheckCrowding(const Options& o, int here) {
  constexpr int kMaxRanksPerCore = 64;
  cpu_set_t set;
  CPU_ZERO(&set);
  const int cores = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  const double rings = static_cast<double>(here) * (here - 1) * static_cast<double>(shm::RingBytes());
  const double memory = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  char line[512];
  if (rings > memory) {
    std::snprintf(line, sizeof line,
                  "hooprun: -np %d: the shared-memory rings between every pair of ranks would need "
                  "%.1f GB (N x (N-1) x %zu KiB), more than this host's %.1f GB\n",
                  here, rings / 1e9, shm::RingBytes() / 1024, memory / 1e9);
    std::fputs(line, stderr);
    return false;
  }
  if (here > kMaxRanksPerCore * cores) {
    std::fprintf(stderr,
                 "hooprun: -np %d on %d core%s: more than %d ranks per core is not supported (ranks that wait "
                 "long for a core are taken for lost peers); use at most %d\n",
                 here, cores, cores == 1 ? "" : "s", kMaxRanksPerCore, kMaxRanksPerCore * cores);
    return false;
  }
  if (here > cores && !o.oversubscribe)
    std::fprintf(stderr,
                 "hooprun: warning: %d ranks on %d core%s (oversubscribed): ranks share cores and wait for "
                 "each other's turns; shm rings take up to %.0f MB (--oversubscribe: no warning)\n",
                 here, cores, cores == 1 ? "" : "s", rings / 1e6);
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
  if (opts->check_build) return PrintCheckBuild();
  if (opts->agent) return RunAgent();
  if (opts->status) return ShowStatus(*opts, hoop::ProcessEnvironment());
  // Where every rank goes: -H or --hostfile, else -np ranks on this host.
  auto plan = PlanRanks(*opts);
  if (!plan.ok()) {
    std::fprintf(stderr, "hooprun: %s\n", plan.status().message().c_str());
    return 2;
  }
  std::vector<int> local;
  for (int r = 0; r < opts->np; ++r)
    if (plan->here[static_cast<size_t>(r)]) local.push_back(r);
  // --output-filename: every local rank's files, made before anything starts.
  auto copies = OutputFiles(*opts, plan->here);
  if (!copies.ok()) {
    std::fprintf(stderr, "hooprun: %s\n", copies.status().message().c_str());
    return 2;
  }
  // Each local rank's processors (remote ones are bound by their agent), by job rank.
  auto local_bound = BindRanks(opts->bind_to, opts->report_bindings, local);
  if (!local_bound.ok()) {
    std::fprintf(stderr, "hooprun: %s\n", local_bound.status().message().c_str());
    return 2;
  }
  std::vector<std::vector<int>> bound(static_cast<size_t>(opts->np));
  for (size_t i = 0; i < local.size(); ++i) bound[static_cast<size_t>(local[i])] = (*local_bound)[i];
  // Once for the job, before anything starts (the ranks' PATH: -x PATH=... if given).
  const char* path = std::getenv("PATH");
  for (auto& [k, v] : opts->env)
    if (k == "PATH") path = v.c_str();
  std::string why;
  if (!opts->wdir.empty() && !local.empty()) {
    struct stat st {};
    const bool there = ::stat(opts->wdir.c_str(), &st) == 0;
    if (!there || !S_ISDIR(st.st_mode)) {
      std::fprintf(stderr, "hooprun: --wdir %s: %s\n", opts->wdir.c_str(),
                   there ? "not a folder" : std::strerror(errno));
      return 2;
    }
  }
  // A relative path with a '/' is found from where the ranks will run.
  const std::string& prog = opts->command[0];
  const std::string checked =
      !opts->wdir.empty() && prog.find('/') != std::string::npos && prog[0] != '/' ? opts->wdir + "/" + prog : prog;
  if (int code = local.empty() ? 0 : CheckProgram(checked, path, &why)) {
    std::fprintf(stderr, "hooprun: %s\n", why.c_str());
    return code;
  }
  if (!CheckCrowding(*opts, static_cast<int>(local.size()))) return 2;
  // Other hosts: every one answers over ssh before anything starts, and the store listens where
  // all of them can reach it.
  std::string store_host = "127.0.0.1";
  const bool elastic_address = opts->elastic() && (!opts->store_address.empty() || !opts->network_interface.empty());
  if (!plan->remote.empty() || elastic_address) {
    if (opts->verbose)
      std::fprintf(stderr, "hooprun: checking %zu host%s over ssh (--start-timeout %g s)\n", plan->remote.size(),
                   plan->remote.size() == 1 ? "" : "s", opts->ssh.start_timeout_s);
    if (hoop::Status reach = CheckHosts(plan->remote, opts->ssh); !reach.ok()) {
      std::fprintf(stderr, "hooprun: %s\n", reach.message().c_str());
      return 1;
    }
    auto address =
        StoreAddress(opts->store_address, opts->network_interface, plan->remote.empty() ? "" : plan->remote[0]);
    if (!address.ok()) {
      std::fprintf(stderr, "hooprun: %s\n", address.status().message().c_str());
      return 2;
    }
    store_host = *address;
  }
  // First, before any thread or descriptor of the job exists: the process that cleans up if
  // hooprun is killed.
  Sentinel sentinel;
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGUSR1}) sigaddset(&mask, s);
  ::sigprocmask(SIG_BLOCK, &mask, nullptr);
  int sig_fd = ::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  ::signal(SIGPIPE, SIG_IGN);

  std::string token = NewToken();
  auto server = hoop::TcpStoreServer::Start(store_host, 0, token);
  if (!server.ok()) {
    std::fprintf(stderr, "hooprun: cannot start the store on %s: %s\n", store_host.c_str(),
                 server.status().message().c_str());
    return 1;
  }
  const std::string store = "tcp://" + store_host + ":" + std::to_string((*server)->port());
  if (opts->verbose) PrintPlan(*opts, *plan, bound, store);
  std::vector<Rank> ranks;
  std::vector<Agent> agents;
  auto stop_started = [&] {
    for (auto& k : ranks)
      if (!k.remote) ::kill(-k.pid, SIGKILL);
    for (auto& a : agents) ::kill(-a.pid, SIGKILL);
  };
  const auto base = hoop::ProcessEnvironment();
  // torchrun's rendezvous for scripts that call init_process_group("env://"): rank 0's host
  // (this one's store address when rank 0 runs here).
  for (auto& kv : TorchrunJobEnv(base, opts->env, plan->here[0] ? store_host : plan->placed[0].host))
    opts->env.push_back(kv);
  // The flight recorders' dumps (at a failure, on SIGUSR1) go beside the ranks' output, unless
  // HOOP_TRACE_DIR says otherwise.
  if (auto dir = TraceDirEnv(base, opts->env, opts->output_dir)) opts->env.push_back(*dir);
  for (int r = 0; r < opts->np; ++r) {
    const Placement& at = plan->placed[static_cast<size_t>(r)];
    if (!plan->here[static_cast<size_t>(r)]) {
      Rank placeholder;
      placeholder.rank = r;
      placeholder.host = at.host;
      placeholder.remote = true;
      placeholder.local_rank = at.local_rank;
      ranks.push_back(std::move(placeholder));
      continue;
    }
    auto rank = StartRank(r, opts->command, RankEnv(base, opts->env, r, opts->np, at, store, token),
                          bound[static_cast<size_t>(r)], opts->wdir);
    if (!rank.ok()) {
      std::fprintf(stderr, "hooprun: cannot start rank %d: %s\n", r, rank.status().message().c_str());
      stop_started();
      return 1;
    }
    sentinel.Started(rank->pid);
    if (opts->verbose) std::fprintf(stderr, "hooprun: started rank %d (pid %d)\n", r, static_cast<int>(rank->pid));
    rank->host = at.host;
    rank->local_rank = at.local_rank;
    rank->out_copy = (*copies)[static_cast<size_t>(r)].first;
    rank->err_copy = (*copies)[static_cast<size_t>(r)].second;
    ranks.push_back(std::move(rank).value());
  }
  if (!plan->remote.empty()) {
    // The agents run this same hooprun, found at the same path on every host; the ranks there
    // start in this folder (--wdir: that one) unless it is missing there.
    char self[4096] = {0}, cwd[4096] = {0};
    if (::readlink("/proc/self/exe", self, sizeof self - 1) < 0 || !::getcwd(cwd, sizeof cwd)) {
      std::perror("hooprun: finding its own path and folder");
      stop_started();
      return 1;
    }
    for (const std::string& host : plan->remote) {
      std::vector<std::pair<int, Placement>> there;
      for (int r = 0; r < opts->np; ++r)
        if (plan->placed[static_cast<size_t>(r)].host == host)
          there.emplace_back(r, plan->placed[static_cast<size_t>(r)]);
      auto agent = StartAgent(host, opts->ssh, self,
                              AgentPlan(*opts, there, host, store, token, opts->wdir.empty() ? cwd : opts->wdir));
      if (!agent.ok()) {
        std::fprintf(stderr, "hooprun: cannot start the agent on %s: %s\n", host.c_str(),
                     agent.status().message().c_str());
        stop_started();
        return 1;
      }
      sentinel.Started(agent->pid);
      for (int r = 0; r < opts->np; ++r)
        if (plan->placed[static_cast<size_t>(r)].host == host) agent->ranks.push_back(r);
      agents.push_back(std::move(agent).value());
    }
  }
  Writer out(STDOUT_FILENO), err(STDERR_FILENO);
  Spawner spawner;
  if (opts->elastic()) spawner = MakeSpawner(*opts, *plan, base, store, token, store_host != "127.0.0.1");
  Job job(*opts, std::move(ranks), std::move(agents), **server, sentinel, out, err, plan->hosts, std::move(spawner));
  const std::string job_file = WriteJobFile(base, store, token, opts->np, opts->command);  // for --status
  const int code = job.Run(sig_fd);
  RemoveJobFile(job_file);
  // Every rank is reaped. Output a stopped reader never takes is abandoned, and with it the
  // writer threads stuck in write(): exit without waiting for them.
  if (!job.Flush(sig_fd)) {
    sentinel.Done();
    std::_Exit(code);
  }
  return code;
}
