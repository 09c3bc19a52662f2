#include "tensorfusion/message_table.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <sstream>

#include "collectives/kernels/wire.h"

namespace hoop::fusion {

std::string RankList(const std::vector<int>& ranks) {
  std::ostringstream os;
  os << (ranks.size() == 1 ? "rank " : "ranks ");
  for (size_t i = 0; i < ranks.size(); ++i) os << (i ? ", " : "") << ranks[i];
  return os.str();
}

namespace {

std::string CompressionText(uint8_t c) {
  return c == kDefaultCompression ? "default" : CompressionName(static_cast<Compression>(c));
}

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

}  // namespace

std::string DescribeDisagreement(const std::vector<TensorParams>& by_rank, const std::vector<bool>& skip) {
  // Each field, shown as text; a field whose text differs between ranks is reported with the
  // ranks that hold each value, in the order the values first appear. Not the memory kind: ranks
  // may hold a tensor in different memory (request.h).
  using Field = std::pair<const char*, std::function<std::string(const TensorParams&)>>;
  const Field fields[] = {
      {"collective", [](const TensorParams& p) { return std::string(CollKindName(p.kind)); }},
      {"dtype", [](const TensorParams& p) { return std::string(DTypeName(p.dtype)); }},
      {"count", [](const TensorParams& p) { return std::to_string(p.count); }},
      {"op", [](const TensorParams& p) { return p.kind == CollKind::kAllreduce ? ReduceOpName(p.op) : "-"; }},
      {"root", [](const TensorParams& p) { return std::to_string(p.root); }},
      {"compression", [](const TensorParams& p) { return CompressionText(p.compression); }},
      {"prescale", [](const TensorParams& p) { return Number(p.prescale); }},
      {"postscale", [](const TensorParams& p) { return Number(p.postscale); }},
      {"fuse", [](const TensorParams& p) { return std::string(p.unfused ? "no" : "yes"); }},
  };
  std::string out;
  for (const auto& [label, show] : fields) {
    std::vector<std::pair<std::string, std::vector<int>>> values;
    for (size_t r = 0; r < by_rank.size(); ++r) {
      if (r < skip.size() && skip[r]) continue;
      std::string v = show(by_rank[r]);
      auto it = std::find_if(values.begin(), values.end(), [&](const auto& x) { return x.first == v; });
      if (it == values.end())
        values.push_back({v, {static_cast<int>(r)}});
      else
        it->second.push_back(static_cast<int>(r));
    }
    if (values.size() < 2) continue;
    std::string part = label;
    for (size_t i = 0; i < values.size(); ++i)
      part += (i ? " vs " : " ") + values[i].first + " on " + RankList(values[i].second);
    out += (out.empty() ? "" : "; ") + part;
  }
  return out;
}

void MessageTable::Add(int rank, const Request& r, Clock::time_point now) {
  if (r.join) {
    if (!joined_[static_cast<size_t>(rank)]) ++joined_count_;
    joined_[static_cast<size_t>(rank)] = true;
    last_joined_ = rank;
    return;
  }
  auto [it, fresh] = entries_.try_emplace(r.name);
  Entry& e = it->second;
  Clock::time_point submitted = now - std::chrono::milliseconds(r.age_ms);
  if (fresh) {
    e.by_rank.resize(static_cast<size_t>(n_));
    e.first = submitted;
    e.warned = submitted;
  }
  e.first = std::min(e.first, submitted);
  auto& slot = e.by_rank[static_cast<size_t>(rank)];
  if (!slot) ++e.reported;
  slot = r.params;
  if (e.reported == n_ && !e.completed) e.completed = ++completions_;
}

std::vector<int> MessageTable::Ranks(const Entry& e, bool submitted) const {
  std::vector<int> out;
  for (int r = 0; r < n_; ++r)
    if (e.by_rank[static_cast<size_t>(r)].has_value() == submitted) out.push_back(r);
  return out;
}

Response MessageTable::Decide(const std::string& name, const Entry& e) const {
  Response r;
  r.name = name;
  std::vector<TensorParams> all;
  std::vector<bool> stand_in;
  std::vector<int> joined;
  bool reduces = true;
  for (auto p = e.by_rank.rbegin(); p != e.by_rank.rend(); ++p)
    if (*p) r.params = **p;  // the lowest reporting rank's: rank 0's where it reported
  for (int rank = 0; rank < n_; ++rank) {
    const auto& p = e.by_rank[static_cast<size_t>(rank)];
    all.push_back(p ? *p : r.params);
    stand_in.push_back(!p);
    reduces = reduces && (!p || p->kind == CollKind::kAllreduce);
    if (joined_[static_cast<size_t>(rank)]) joined.push_back(rank);
  }
  const bool stood_in = e.reported < n_;
  if (stood_in && !reduces) {
    r.error = "tensor '" + name + "': " + CollKindName(r.params.kind) + " cannot run while " + RankList(joined) +
              (joined.size() == 1 ? " has" : " have") +
              " joined (join: ranks that have joined stand in for allreduce only, until every rank has joined)";
  } else if (std::string diff = DescribeDisagreement(all, stand_in); !diff.empty()) {
    r.error = "tensor '" + name + "': ranks disagree: " + diff;
  }
  return r;
}

std::vector<Response> MessageTable::TakeDecided(Clock::time_point now, std::chrono::milliseconds timeout,
                                                std::string_view timeout_name) {
  std::vector<std::pair<uint64_t, Response>> done;
  std::vector<Response> late;
  for (auto it = entries_.begin(); it != entries_.end();) {
    Entry& e = it->second;
    if (!e.completed && joined_count_ > 0) {
      bool covered = true;  // every rank has reported it or joined
      bool reduces = true;  // only an allreduce can wait for the ranks still running
      for (int rank = 0; rank < n_; ++rank) {
        const auto& p = e.by_rank[static_cast<size_t>(rank)];
        covered = covered && (p || joined_[static_cast<size_t>(rank)]);
        reduces = reduces && (!p || p->kind == CollKind::kAllreduce);
      }
      if (covered || !reduces) e.completed = ++completions_;  // the latter fails at once (Decide)
    }
    if (e.completed) {
      done.push_back({e.completed, Decide(it->first, e)});
    } else if (now - e.first >= timeout) {
      Response r;
      r.name = it->first;
      for (auto& p : e.by_rank)
        if (p) r.params = *p;
      auto secs = std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count() / 1000.0;
      r.error = "tensor '" + r.name + "': " + RankList(Ranks(e, false)) + " did not submit it within " +
                std::string(timeout_name) + " (" + Number(secs) + " s); submitted by " + RankList(Ranks(e, true));
      r.timed_out = true;
      late.push_back(std::move(r));
    } else {
      ++it;
      continue;
    }
    it = entries_.erase(it);
  }
  std::sort(done.begin(), done.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Response> out;
  for (auto& d : done) out.push_back(std::move(d.second));
  for (auto& l : late) out.push_back(std::move(l));
  if (joined_count_ == n_) {  // nothing can wait on a rank now: every entry above was covered
    Response r;
    r.join_last = last_joined_;
    out.push_back(std::move(r));
    joined_.assign(static_cast<size_t>(n_), false);
    joined_count_ = 0;
    last_joined_ = -1;
  }
  return out;
}

std::vector<std::string> MessageTable::Stalled(Clock::time_point now, std::chrono::duration<double> after) {
  std::vector<std::string> lines;
  for (auto& [name, e] : entries_) {
    if (e.completed || now - e.warned < after || now - e.first < after) continue;
    e.warned = now;
    double waited = std::chrono::duration<double>(now - e.first).count();
    char secs[32];
    std::snprintf(secs, sizeof(secs), "%.1f", waited);
    lines.push_back("tensor '" + name + "' has waited " + secs + " s: submitted by " + RankList(Ranks(e, true)) +
                    ", not yet by " + RankList(Ranks(e, false)));
  }
  return lines;
}

}  // namespace hoop::fusion
