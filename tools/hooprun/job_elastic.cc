// Job's part for elastic jobs (job.h, elastic.h): the discovery script's runs, the newcomers'
// starts, the --min-np and --reset-limit bounds, and the ranks it stops itself.
#include "tools/hooprun/job.h"

namespace hoop::run {

void Job::Elastic() {
  Discover();
  if (!stopping_) CheckMembers();
  if (stopping_) return;
  Fill();
  WatchMinimum();
  const auto now = Clock::now();
  for (Rank& r : ranks_) {
    if (!r.dismissed || r.exited || r.dismiss_killed || now - r.dismissed_at < kTermWait) continue;
    r.dismiss_killed = true;
    if (!r.remote)
      ::kill(-r.pid, SIGKILL);
    else
      TellAgentOf(r, "kill\n");
  }
}

int Job::Live() const {
  int n = 0;
  for (const Rank& r : ranks_) n += !r.exited;
  return n;
}

std::string Job::LiveText() const {
  const int n = Live();
  return std::to_string(n) + (n == 1 ? " rank" : " ranks") + " live (--min-np " + std::to_string(o_.min_np) + ")";
}

void Job::Lost(const Rank& r) {
  if (!first_loss_) first_loss_ = r.wait_status;
  rest_until_[r.host] = Clock::now() + kRest;
  Event(Who(r) + " " + DescribeExit(r.wait_status) + "; " + LiveText() + (Live() ? ", the others go on" : ""));
  CountReset(Who(r) + " was lost");
}

void Job::CountReset(const std::string& what) {
  ++resets_;
  if (o_.reset_limit > 0 && resets_ > o_.reset_limit)
    StopElastic("--reset-limit " + std::to_string(o_.reset_limit) + " reached (" + what + ": change " +
                std::to_string(resets_) + " of the job's ranks)");
}

void Job::StopElastic(const std::string& why) {
  if (stopping_) return;
  reason_ = why + "; stopped the other ranks";
  const int st = first_loss_ ? *first_loss_ : 0;
  exit_code_ = !first_loss_ ? 1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  if (exit_code_ == 0) exit_code_ = 1;
  BeginStop(false);
}

void Job::Discover() {
  if (o_.discovery_script.empty()) return;
  if (!discovery_.running()) {
    if (Clock::now() - last_discovery_ < kDiscoveryEvery) return;
    last_discovery_ = Clock::now();
    if (Status s = discovery_.Start(o_.discovery_script, o_.slots_per_host); !s.ok()) DiscoveryFailed(s.message());
    return;
  }
  discovery_.Read();
  auto found = discovery_.Result();
  if (!found) return;
  last_discovery_ = Clock::now();
  if (!found->ok()) return DiscoveryFailed(found->status().message());
  discovery_error_.clear();
  ApplyHosts(std::move(*found).value());
}

void Job::DiscoveryFailed(const std::string& why) {
  if (why != discovery_error_) Event(why + "; the hosts stay as they were");  // once, not every second
  discovery_error_ = why;
}

void Job::ApplyHosts(std::vector<HostSlots> now) {
  const HostsChange c = CompareHosts(hosts_, now);
  if (c.empty()) return;
  for (const HostSlots& h : c.added)
    Event("host " + h.host + " added by --host-discovery-script (" + std::to_string(h.slots) +
          (h.slots == 1 ? " slot)" : " slots)"));
  for (const HostSlots& h : c.resized)
    Event("host " + h.host + " now has " + std::to_string(h.slots) + (h.slots == 1 ? " slot" : " slots") +
          " (--host-discovery-script)");
  for (const std::string& host : c.removed) {
    std::vector<int> there;
    for (const Rank& r : ranks_)
      if (!r.exited && r.host == host) there.push_back(r.rank);
    Event("host " + host + " is no longer listed by --host-discovery-script" +
          (there.empty() ? "" : "; stopping its " + RankList(there)));
    for (Rank& r : ranks_)
      if (!r.exited && r.host == host) Dismiss(r);
  }
  hosts_ = std::move(now);
  aim_ = AimedRanks(hosts_, o_.max_np);
  CountReset("the hosts changed");
}

void Job::Dismiss(Rank& r) {
  r.dismissed = true;
  r.dismissed_at = Clock::now();
  if (!r.remote)
    ::kill(-r.pid, SIGTERM);
  else
    TellAgentOf(r, "term\n");
}

void Job::TellAgentOf(const Rank& r, const char* line) {
  for (Agent& a : agents_) {
    if (a.exited || a.in_fd < 0 || std::find(a.ranks.begin(), a.ranks.end(), r.rank) == a.ranks.end()) continue;
    ssize_t ignored = ::write(a.in_fd, line, std::strlen(line));
    (void)ignored;
  }
}

void Job::Fill() {
  if (ending_ || !spawner_.here) return;
  std::map<std::string, int> live;
  for (const Rank& r : ranks_)
    if (!r.exited) ++live[r.host];
  for (int total = Live(); total < aim_; ++total) {
    std::vector<std::string> resting;
    const auto now = Clock::now();
    for (const auto& [host, until] : rest_until_)
      if (now < until) resting.push_back(host);
    const std::string host = FreeHost(hosts_, live, resting);
    if (host.empty() || !StartNewcomer(host)) return;
    ++live[host];
  }
}

int Job::FreeLocalRank(const std::string& host) const {
  for (int k = 0;; ++k) {
    bool taken = false;
    for (const Rank& r : ranks_) taken |= !r.exited && r.host == host && r.local_rank == k;
    if (!taken) return k;
  }
}

bool Job::StartNewcomer(const std::string& host) {
  const int number = static_cast<int>(ranks_.size());
  const int local = FreeLocalRank(host);
  int slots = 1;
  for (const HostSlots& h : hosts_)
    if (h.host == host) slots = h.slots;
  Rank placeholder;
  placeholder.rank = number;
  placeholder.remote = true;
  if (spawner_.is_here(host)) {
    auto started = spawner_.here(number, local, slots);
    if (!started.ok()) return StartFailed(number, host, started.status().message());
    sentinel_.Started(started->pid);
    placeholder = std::move(started).value();
  } else {
    auto agent = spawner_.there(number, host, local, slots);
    if (!agent.ok()) return StartFailed(number, host, agent.status().message());
    sentinel_.Started(agent->pid);
    agent->ranks = {number};
    agent->newcomers = true;
    agents_.push_back(std::move(agent).value());
    multi_host_ = true;
  }
  placeholder.host = host;
  placeholder.local_rank = local;
  placeholder.newcomer = true;
  ranks_.push_back(std::move(placeholder));
  PublishRanks();
  const Rank& r = ranks_.back();
  Event((r.remote ? "starting rank " + std::to_string(number) + " on host " + host + " (over ssh)"
                  : "started " + Who(r) + " on host " + host) +
        ", a newcomer: the job's ranks admit it at their next grow");
  return true;
}

bool Job::StartFailed(int number, const std::string& host, const std::string& why) {
  Event("cannot start rank " + std::to_string(number) + " on host " + host + ": " + why);
  rest_until_[host] = Clock::now() + kRest;
  return false;
}

void Job::WatchMinimum() {
  if (ending_ || stopping_) return;
  const auto now = Clock::now();
  if (Live() >= o_.min_np) {
    if (below_since_) Event("back to " + LiveText());
    below_since_.reset();
    return;
  }
  if (!below_since_) {
    below_since_ = now;
    Event(LiveText() + ": fewer than --min-np; waiting up to --elastic-timeout " +
          std::to_string(static_cast<int>(o_.elastic_timeout_s)) + " s for hosts");
    return;
  }
  if (now - *below_since_ > std::chrono::duration<double>(o_.elastic_timeout_s))
    StopElastic("fewer than --min-np " + std::to_string(o_.min_np) + " ranks for --elastic-timeout " +
                std::to_string(static_cast<int>(o_.elastic_timeout_s)) + " s (" + std::to_string(Live()) + " live)");
}

void Job::CheckMembers() {
  std::vector<Rank*> waiting;
  for (Rank& r : ranks_) {
    if (r.exited || r.dismissed) continue;
    if (!r.newcomer) return;  // a rank the job started with lives
    waiting.push_back(&r);
  }
  std::vector<int> never;
  if (!waiting.empty()) {
    const auto admitted = store_.Find("hoop/join/admitted/");
    for (Rank* r : waiting) {
      if (admitted.count("hoop/join/admitted/" + std::to_string(r->rank))) return;  // a member lives
      never.push_back(r->rank);
    }
    Event(RankList(never) + (never.size() == 1 ? " was" : " were") +
          " never admitted: no rank of the job is left to admit " + (never.size() == 1 ? "it" : "them") +
          "; stopping " + (never.size() == 1 ? "it" : "them"));
    for (Rank* r : waiting) Dismiss(*r);
  }
  if (!ending_)
    StopElastic("no rank the job admitted is left (each failed or was stopped), so none can take newcomers in");
  ending_ = true;
}

}  // namespace hoop::run
