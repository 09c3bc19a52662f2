// hooprun's running job: one poll loop over the signals, the local ranks' pipes and the remote
// hosts' agents (remote.h); reaping, the one stopping path for every cause (a rank failed, an ssh
// connection ended, --timeout, Ctrl-C: a grace period, SIGTERM, SIGKILL, and last the agents'
// ssh), and the line that says why the job failed; for an elastic job (elastic.h), the
// discovery script's runs, the newcomers' starts, and the --min-np and --reset-limit bounds.
// Used by main.cc alone.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "collectives/core/stall.h"
#include "tools/hooprun/discovery.h"
#include "tools/hooprun/elastic.h"
#include "tools/hooprun/group_leftovers.h"
#include "tools/hooprun/options.h"
#include "tools/hooprun/output.h"
#include "tools/hooprun/ranks.h"
#include "tools/hooprun/remote.h"
#include "tools/hooprun/sentinel.h"
#include "tools/hooprun/shm_leftovers.h"
#include "tools/hooprun/status.h"
#include "transport/store/tcp_store.h"

namespace hoop::run {

using Clock = std::chrono::steady_clock;
inline constexpr auto kGrace = std::chrono::seconds(2);           // for the other ranks to report a failure
inline constexpr auto kTermWait = std::chrono::seconds(2);        // between SIGTERM and SIGKILL
inline constexpr auto kDiscoveryEvery = std::chrono::seconds(1);  // --host-discovery-script, as horovodrun
inline constexpr auto kRest = std::chrono::seconds(1);            // no newcomer on a host this soon after a loss there

// How an elastic job starts a newcomer, numbered `rank` in the job (main.cc fills it in): on
// this host, or on another through an agent of its own; is_here tells which a host is.
struct Spawner {
  std::function<StatusOr<Rank>(int rank, int local_rank, int local_size)> here;
  std::function<StatusOr<Agent>(int rank, const std::string& host, int local_rank, int local_size)> there;
  std::function<bool(const std::string& host)> is_here;
};

class Job {
 public:
  // An elastic job (o.elastic()) also gets `hosts`, the hosts and slots newcomers may take, and
  // how to start them.
  Job(const Options& o, std::vector<Rank> ranks, std::vector<Agent> agents, TcpStoreServer& store, Sentinel& sentinel,
      Writer& out, Writer& err, std::vector<HostSlots> hosts = {}, Spawner spawner = {})
      : o_(o),
        ranks_(std::make_move_iterator(ranks.begin()), std::make_move_iterator(ranks.end())),
        agents_(std::make_move_iterator(agents.begin()), std::make_move_iterator(agents.end())),
        store_(store),
        sentinel_(sentinel),
        out_(out),
        err_(err),
        hosts_(std::move(hosts)),
        spawner_(std::move(spawner)) {
    for (const auto& r : ranks_) multi_host_ |= r.remote;
    aim_ = static_cast<int>(ranks_.size());  // -np to start with; the discovery script may raise it
  }

  int Run(int sig_fd) {
    const auto start = Clock::now();
    PublishRanks();
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
      for (auto& a : agents_) {
        if (!relay) break;
        if (a.out_fd >= 0) fds.push_back({a.out_fd, POLLIN, 0});
        if (a.err_fd >= 0) fds.push_back({a.err_fd, POLLIN, 0});
      }
      ::poll(fds.data(), fds.size(), 100);
      if (fds[0].revents & POLLIN) HandleSignals(sig_fd);
      for (auto& r : ranks_) {
        if (!relay) break;
        out_.Write(Stamped(Relay(r.out_fd, r.out_buf, Prefix(r, "<stdout>: "), r.out_copy)));
        std::string err = Relay(r.err_fd, r.err_buf, Prefix(r, "<stderr>: "), r.err_copy);
        if (!err.empty()) r.last_err = Clock::now();
        err_.Write(Stamped(std::move(err)));
      }
      for (auto& a : agents_)
        if (relay) ReadAgent(a);
      Reap();
      if (o_.elastic() && !stopping_) Elastic();
      if (o_.timeout_s > 0 && !stopping_ && Clock::now() - start > std::chrono::duration<double>(o_.timeout_s)) {
        reason_ = "the job ran past --timeout " + std::to_string(static_cast<int>(o_.timeout_s)) + " s";
        exit_code_ = 124;
        BeginStop(true);  // no grace: nothing failed that the ranks could report; --timeout N ends at N
      }
      Escalate();
    }
    StopLeftovers();
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
        while (::read(sig_fd, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si))) hurry |= si.ssi_signo != SIGCHLD;
      }
      if (hurry && std::max(out_.Stalled(), err_.Stalled()) > std::chrono::seconds(2)) return false;
    }
    return true;
  }

 private:
  // --timestamp-output (mpirun's): every rank's line starts with the time hooprun relayed it.
  std::string Stamped(std::string lines) const { return o_.timestamp_output ? StampLines(lines) : lines; }

  std::string Prefix(const Rank& r, const char* stream) const {
    std::string p("[");
    if (multi_host_) p.append(r.host + ":");  // [host:rank] when the job spans hosts
    p.append(std::to_string(r.rank));
    p.append("]");
    p.append(o_.tag_output ? stream : " ");
    return p;
  }

  // What the ranks here left running in their process groups (group_leftovers.h).
  void StopLeftovers() {
    std::vector<std::pair<std::string, pid_t>> groups;
    for (const auto& r : ranks_)
      if (!r.remote && r.pid > 0) groups.emplace_back(Who(r), r.pid);
    for (const auto& line : run::StopLeftovers(groups)) err_.Write("hooprun: " + line + "\n");
  }

  bool AllDone() {
    bool all_exited = true;
    for (auto& r : ranks_) all_exited &= r.exited;
    for (auto& a : agents_) all_exited &= a.exited;
    if (!all_exited) return false;
    // Output still buffered in pipes is relayed first; a grandchild holding a pipe open does
    // not keep hooprun alive for more than a second.
    bool open = false;
    for (auto& r : ranks_) open |= r.out_fd >= 0 || r.err_fd >= 0;
    for (auto& a : agents_) open |= a.out_fd >= 0 || a.err_fd >= 0;
    if (!open) return true;
    if (!all_exited_at_) all_exited_at_ = Clock::now();
    return Clock::now() - *all_exited_at_ > std::chrono::seconds(1);
  }

  void HandleSignals(int sig_fd) {
    signalfd_siginfo si;
    while (::read(sig_fd, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si))) {
      if (si.ssi_signo == SIGUSR1) AskForTraces();
      if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM || si.ssi_signo == SIGHUP) {
        if (!stopping_) {
          reason_ =
              std::string("interrupted by ") + ::strsignal(static_cast<int>(si.ssi_signo)) + "; stopped every rank";
          exit_code_ = 128 + static_cast<int>(si.ssi_signo);  // as a shell reports it: 130, 143, 129
          // Ctrl-C reaches the ranks as Ctrl-C (Python's KeyboardInterrupt, a trainer's "interrupted
          // by Interrupt"); SIGTERM follows if they are still there, then SIGKILL.
          if (si.ssi_signo == SIGINT) first_signal_ = SIGINT;
        }
        BeginStop(true);
      }
    }
  }

  void Reap() {
    int st = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &st, WNOHANG)) > 0) {
      if (discovery_.running() && pid == discovery_.pid()) {
        discovery_.Reaped(st);
        continue;
      }
      for (auto& a : agents_)
        if (a.pid == pid) AgentEnded(a, st);
      for (auto& r : ranks_) {
        if (r.remote || r.pid != pid) continue;
        sentinel_.Reaped(r.pid);
        RankEnded(r, st);
        if (WIFSIGNALED(st))  // its UCX may have left a segment's file (an agent does the same for its ranks)
          for (const auto& name : RemoveUcxLeftovers(began_))
            err_.Write("hooprun: removed /dev/shm/" + name + ", UCX's, which " + Who(r) + " left when killed\n");
      }
    }
  }

  // The ranks that timed out name the one that stopped making progress in the store
  // (collectives/core/stall.h): "hoop/<comm>/stalled/<rank that timed out>" = its verdict.
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
      who += (who.empty() ? "" : ", ") + (rank ? Who(*rank) : "rank " + std::to_string(r));
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
    // SIGKILL comes from outside (the OOM killer, a user, a scheduler): the likeliest cause of
    // all. Then any other signal; then an exit with an error. A remote rank's report comes over
    // ssh, later than a local rank's that failed because of it: order of arrival says little.
    // Among ranks that failed alike, the first to complain on stderr: ranks that fail because
    // another did ("lost peer 0") say so after it, or not at all, and their exits may be reaped
    // first (reaping order says nothing within one poll).
    const Rank* cause = failed_.front();
    auto weight = [](const Rank* r) {
      const int st = r->wait_status;
      return WIFSIGNALED(st) ? (WTERMSIG(st) == SIGKILL ? 2 : 1) : 0;
    };
    auto complained_first = [](const Rank* a, const Rank* b) {
      const Clock::time_point never{};
      return a->last_err != never && (b->last_err == never || a->last_err < b->last_err);
    };
    for (const Rank* r : failed_)
      if (weight(r) > weight(cause) || (weight(r) == weight(cause) && complained_first(r, cause))) cause = r;
    int st = cause->wait_status;
    if (exit_code_ == 0 || exit_code_ == 124) {
      if (exit_code_ == 0) exit_code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      if (reason_.empty())
        reason_ = Who(*cause) + " " + DescribeExit(st) +
                  (o_.enable_recovery && !termed_ ? "; the other ranks went on (--enable-recovery)"
                                                  : "; stopped the other ranks");
    }
  }

  void BeginStop(bool now) {
    if (!stopping_) {
      stopping_ = true;
      stop_at_ = Clock::now();
    }
    if (now && !termed_) {
      Signal(first_signal_);
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
    if (termed_ && first_signal_ != SIGTERM && t - term_at_ > kTermWait) {  // Ctrl-C was not enough
      Signal(SIGTERM);
      first_signal_ = SIGTERM;
      term_at_ = t;
    }
    if (termed_ && !killed_ && t - term_at_ > kTermWait) {
      Signal(SIGKILL);
      killed_ = true;
    }
    if (killed_ && !ssh_killed_ && t - kill_at_ > kTermWait) {
      for (auto& a : agents_)
        if (!a.exited) ::kill(-a.pid, SIGKILL);
      ssh_killed_ = true;
    }
  }

  // SIGUSR1 to hooprun: to every rank that said it dumps on it (a communicator of its own made:
  // hoop/trace/signal/RANK; before that the signal's default action would end it), the process
  // not its group (a rank's helpers keep the default action), remote ones through their agent.
  void AskForTraces() {
    std::set<int> ready;
    for (const auto& [key, value] : store_.Find("hoop/trace/signal/"))
      if (value == std::to_string(SIGUSR1)) ready.insert(std::atoi(key.substr(key.rfind('/') + 1).c_str()));
    std::vector<int> asked, not_ready;
    for (auto& r : ranks_)
      if (!r.exited && !r.remote)
        (ready.count(r.rank) && ::kill(r.pid, SIGUSR1) == 0 ? asked : not_ready).push_back(r.rank);
    for (auto& a : agents_) {
      if (a.exited || a.in_fd < 0) continue;
      std::ostringstream line;
      line << "usr1";
      for (int r : a.ranks) {
        (ready.count(r) ? asked : not_ready).push_back(r);
        if (ready.count(r)) line << ' ' << r;
      }
      line << '\n';
      const std::string text = line.str();
      ssize_t ignored = ::write(a.in_fd, text.data(), text.size());
      (void)ignored;
    }
    std::ostringstream text;
    text << "hooprun: SIGUSR1: asked " << asked.size()
         << " rank(s) for their flight recorders (each writes hoop-trace.<communicator>.<rank>.json into "
            "HOOP_TRACE_DIR, else its temporary folder, and says where)";
    if (!not_ready.empty()) {
      text << "; not rank(s) ";
      for (size_t i = 0; i < not_ready.size(); ++i) text << (i ? "," : "") << not_ready[i];
      text << ": no communicator yet, or SIGUSR1 is their program's own (the signal would have ended them)";
    }
    std::fprintf(stderr, "%s\n", text.str().c_str());
  }

  void Signal(int sig) {
    for (auto& r : ranks_)
      if (!r.exited && !r.remote) ::kill(-r.pid, sig);
    // Remote ranks: their agent signals them. SIGKILL also ends its input (the agent then
    // stops whatever is left and exits), and if even the agent does not go within kTermWait,
    // its ssh is killed: the session's end reaches it, and its ranks die with it.
    for (auto& a : agents_) {
      if (a.exited || a.in_fd < 0) continue;
      const char* line = sig == SIGKILL ? "kill\n" : "term\n";
      ssize_t ignored = ::write(a.in_fd, line, std::strlen(line));
      (void)ignored;
      if (sig == SIGKILL) {
        ::close(a.in_fd);
        a.in_fd = -1;
      }
    }
    if (sig == SIGKILL) kill_at_ = Clock::now();
  }

  // "rank 3 (pid 123)", or "rank 3 on host node2 (pid 123)" for a remote one.
  std::string Who(const Rank& r) const {
    return "rank " + std::to_string(r.rank) + (r.remote ? " on host " + r.host : std::string()) +
           (r.pid > 0 ? " (pid " + std::to_string(r.pid) + ")" : std::string());
  }

  // The survivors of a job that goes on learn at once who is gone, on any host: a shrink waits
  // for nobody more (collectives/core/shrink.cc).
  void Publish(int rank) {
    if (!o_.enable_recovery) return;
    if (!exited_.empty()) exited_ += ',';
    exited_ += std::to_string(rank);
    store_.Put("hoop/exited", exited_);
  }

  // hoop/launcher/ranks: each rank's host, pid and state, for `hooprun --status` (status.h).
  void PublishRanks() {
    std::string list = "[";
    for (const auto& r : ranks_) {
      if (list.size() > 1) list += ',';
      list += RankStateJson(r);
    }
    list += ']';
    store_.Put("hoop/launcher/ranks", list);
  }

  // A rank's end, reported by this process (a local rank) or by its agent.
  void RankEnded(Rank& r, int st) {
    r.exited = true;
    r.wait_status = st;
    Publish(r.rank);
    PublishRanks();
    if (r.dismissed) return;  // an elastic job stopped it (its host was dropped, or it was never admitted)
    if (ExitedCleanly(st)) {
      ending_ = true;  // the job is finishing: an elastic one starts nobody more
      return;
    }
    if (o_.elastic() && !stopping_) return Lost(r);
    if (!termed_) failed_.push_back(&r);  // failed on its own, not because we stopped it
    Failed(r);
  }

  // A rank failed on its own: the job stops, or with --enable-recovery says so and goes on.
  void Failed(const Rank& r) {
    if (!o_.enable_recovery || stopping_) {
      BeginStop(false);
      return;
    }
    err_.Write("hooprun: " + Who(r) + " " + DescribeExit(r.wait_status) +
               "; the other ranks go on (--enable-recovery)\n");
  }

  // The agent's output: its ranks' lines (already prefixed) go out as they are; its control
  // lines say which rank started and ended; anything else on its stderr is ssh's or the agent's
  // own and goes out under the host's name.
  void ReadAgent(Agent& a) {
    std::string lines = Relay(a.out_fd, a.out_buf, "");
    for (size_t start = 0, nl; (nl = lines.find('\n', start)) != std::string::npos; start = nl + 1) {
      std::string line = lines.substr(start, nl - start);
      if (!line.empty() && line[0] == kControl)
        Control(a, line.substr(1));
      else
        out_.Write(Stamped(line + "\n"));
    }
    lines = Relay(a.err_fd, a.err_buf, "");
    for (size_t start = 0, nl; (nl = lines.find('\n', start)) != std::string::npos; start = nl + 1) {
      std::string line = lines.substr(start, nl - start);
      if (!line.empty() && line[0] == '[') {
        err_.Write(Stamped(line + "\n"));
      } else if (!line.empty()) {
        a.last_err = line;
        err_.Write("[" + a.host + "] " + line + "\n");
      }
    }
  }

  void Control(Agent& a, const std::string& line) {
    std::istringstream in(line);
    std::string what;
    in >> what;
    int rank = -1;
    long value = 0;
    if (what == "started" && (in >> rank >> value) && rank >= 0 && rank < static_cast<int>(ranks_.size())) {
      ranks_[static_cast<size_t>(rank)].pid = static_cast<pid_t>(value);
      if (o_.verbose)
        err_.Write("hooprun: started rank " + std::to_string(rank) + " on host " + a.host + " (pid " +
                   std::to_string(value) + ")\n");
    } else if (what == "exit" && (in >> rank >> value) && rank >= 0 && rank < static_cast<int>(ranks_.size())) {
      Rank& r = ranks_[static_cast<size_t>(rank)];
      if (!r.exited) RankEnded(r, static_cast<int>(value));
    } else if (what == "fail" && (in >> value)) {
      std::string why;
      std::getline(in, why);
      if (!why.empty() && why[0] == ' ') why.erase(0, 1);
      if (a.newcomers && !stopping_) {  // an elastic job's newcomers: only they did not start
        Event("host " + a.host + ": " + why + "; " + RankList(a.ranks) + " not started");
        for (int r : a.ranks) ranks_[static_cast<size_t>(r)].exited = ranks_[static_cast<size_t>(r)].dismissed = true;
        rest_until_[a.host] = Clock::now() + kRest;
        return;
      }
      if (!stopping_) {
        reason_ = "host " + a.host + ": " + why + "; stopped the other ranks";
        exit_code_ = value > 0 && value < 256 ? static_cast<int>(value) : 1;
      }
      BeginStop(true);
    }
  }

  // The agent's ssh ended. With every one of its ranks reported, that is the normal end; else
  // the connection or the agent was lost, and so were the ranks it still ran.
  void AgentEnded(Agent& a, int st) {
    // What the agent wrote before its ssh ended may still wait in the pipe, its last ranks' exit
    // lines among them (the loop read the pipe before it reaped ssh): read it all first, or a
    // rank that ended well would count as lost with its host. Bounded: a process that inherited
    // the pipe could keep it open.
    for (int bites = 0; bites < 64 && (a.out_fd >= 0 || a.err_fd >= 0); ++bites) ReadAgent(a);
    a.exited = true;
    a.wait_status = st;
    sentinel_.Reaped(a.pid);
    if (a.in_fd >= 0) ::close(a.in_fd), a.in_fd = -1;
    std::string lost;
    std::vector<Rank*> gone;
    for (int r : a.ranks) {
      Rank& rank = ranks_[static_cast<size_t>(r)];
      if (rank.exited) continue;
      lost += (lost.empty() ? "" : ", ") + std::to_string(r);
      rank.exited = true;
      rank.wait_status = st;
      Publish(r);
      if (!rank.dismissed) gone.push_back(&rank);
    }
    if (lost.empty()) return;
    if (o_.elastic() && !stopping_) {  // lost with their host's connection: the others go on
      for (Rank* r : gone) Lost(*r);
      return;
    }
    if (!stopping_) {
      reason_ = "host " + a.host + ": the ssh connection ended (ssh " + DescribeExit(st) +
                (a.last_err.empty() ? "" : ": " + a.last_err) + ") while rank" +
                (lost.find(',') == std::string::npos ? " " : "s ") + lost + " ran there; stopped the other ranks";
      exit_code_ = 255;
    }
    BeginStop(false);
  }

  // ---- Elastic jobs (elastic.h) ----
  // Defined in job_elastic.cc, but Event.
  void Event(const std::string& line) { err_.Write("hooprun: " + line + "\n"); }
  // One turn of the loop: the discovery script, newcomers for free slots, the --min-np watch, and
  // newcomers nobody is left to admit; then dismissed ranks that outstay their SIGTERM.
  void Elastic();
  int Live() const;
  std::string LiveText() const;
  // A rank of an elastic job failed: said, counted, and its slot free for a newcomer (on its
  // host after kRest, so that a program that fails at once does not spin).
  void Lost(const Rank& r);
  void CountReset(const std::string& what);
  void StopElastic(const std::string& why);
  // --host-discovery-script: started every kDiscoveryEvery, its answer taken when it has ended.
  void Discover();
  void DiscoveryFailed(const std::string& why);
  void ApplyHosts(std::vector<HostSlots> now);
  // SIGTERM (its agent's "term" for a remote one), SIGKILL kTermWait later (Elastic).
  void Dismiss(Rank& r);
  void TellAgentOf(const Rank& r, const char* line);
  // Newcomers while the job has fewer ranks than it aims at and a listed host has a free slot.
  void Fill();
  // The smallest local rank no live rank on `host` has.
  int FreeLocalRank(const std::string& host) const;
  bool StartNewcomer(const std::string& host);
  bool StartFailed(int number, const std::string& host, const std::string& why);
  void WatchMinimum();
  // Once no rank the job admitted lives (one it started with, or a newcomer a grow took in),
  // nobody is left to admit the newcomers still waiting: they are stopped. After a clean end the
  // job ends well; after failures it fails, as the job's state went with its ranks.
  void CheckMembers();

  const Options& o_;
  // When the job began, for files its ranks made: its ranks started a moment before the Job.
  const std::time_t began_ = std::time(nullptr) - 10;
  std::deque<Rank> ranks_;  // by job rank; a deque, so that failed_'s pointers stay good as newcomers come
  std::deque<Agent> agents_;
  bool multi_host_ = false;
  bool ssh_killed_ = false;
  Clock::time_point kill_at_;
  TcpStoreServer& store_;
  std::string exited_;  // the job ranks that ended, as hoop/exited lists them
  Sentinel& sentinel_;
  Writer &out_, &err_;
  bool stopping_ = false, termed_ = false, killed_ = false;
  int first_signal_ = SIGTERM;  // what stopping sends first: SIGINT after Ctrl-C
  Clock::time_point stop_at_, term_at_;
  std::optional<Clock::time_point> all_exited_at_;
  std::vector<const Rank*> failed_;
  std::string reason_;
  int exit_code_ = 0;
  // Elastic jobs.
  std::vector<HostSlots> hosts_;
  Spawner spawner_;
  int aim_ = 0;     // the ranks it aims at: -np, then what the discovery script's slots allow
  int resets_ = 0;  // changes of its ranks (--reset-limit)
  bool ending_ = false;
  std::optional<int> first_loss_;  // the first failed rank's wait status: the exit code if it is stopped
  std::optional<Clock::time_point> below_since_;
  std::map<std::string, Clock::time_point> rest_until_;
  DiscoveryRun discovery_;
  Clock::time_point last_discovery_ = Clock::now();
  std::string discovery_error_;
};

}  // namespace hoop::run
