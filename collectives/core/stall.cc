#include "collectives/core/stall.h"

#include <algorithm>
#include <deque>
#include <map>

namespace hoop {
namespace {

std::string Ranks(const std::vector<int>& r) {
  std::string s = r.size() > 1 ? "ranks " : "rank ";
  for (size_t i = 0; i < r.size(); ++i) {
    if (i) s.append(", ");
    s.append(std::to_string(r[i]));
  }
  return s;
}

}  // namespace

std::chrono::milliseconds StallGrace(std::chrono::milliseconds timeout) {
  const auto least = std::min(std::chrono::milliseconds(1000), timeout / 2);
  return std::clamp(timeout / 4, least, std::chrono::milliseconds(10000));
}

void SayTimedOut(std::ostream& os, double timeout_s, std::string_view name) {
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000.0 + 0.5));
  const double grace = static_cast<double>(StallGrace(timeout).count()) / 1000.0;
  os << "timed out after " << timeout_s - grace << " s (" << name << " " << timeout_s << " s, less " << grace
     << " s to find who stopped)";
}

std::string RankListText(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i) s.push_back(',');
    s.append(std::to_string(ranks[i]));
  }
  return s;
}

bool ParseRankList(const std::string& text, std::vector<int>* ranks) {
  ranks->clear();
  size_t at = 0;
  while (true) {  // every item, the last one too, must be a number
    size_t comma = text.find(',', at);
    std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (item.empty() || item.size() > 9 || item.find_first_not_of("0123456789") != std::string::npos) return false;
    ranks->push_back(std::stoi(item));
    if (comma == std::string::npos) return true;
    at = comma + 1;
  }
}

StallVerdict FindStalledRanks(Store& store, const std::string& prefix, int rank, const std::vector<int>& waiting_for,
                              Deadline grace) {
  StallVerdict v;
  if (waiting_for.empty()) return v;
  if (!store.Set(prefix + "stall/" + std::to_string(rank), RankListText(waiting_for)).ok()) return v;
  // Breadth first from this rank, so the chain reported is the shortest.
  std::map<int, std::vector<int>> waits{{rank, waiting_for}};
  std::map<int, int> reached_from;
  std::deque<int> todo(waiting_for.begin(), waiting_for.end());
  for (int p : waiting_for) reached_from.emplace(p, rank);
  while (!todo.empty()) {
    const int r = todo.front();
    todo.pop_front();
    if (waits.count(r)) continue;
    auto rec = store.Get(prefix + "stall/" + std::to_string(r), grace);
    std::vector<int> theirs;
    if (rec.status().code() == Code::kDeadlineExceeded) {
      v.stalled.push_back(r);
      continue;
    }
    if (!rec.ok() || !ParseRankList(*rec, &theirs)) return StallVerdict{};  // the store broke: say nothing
    waits[r] = theirs;
    for (int p : theirs)
      if (!reached_from.count(p) && p != rank) {
        reached_from.emplace(p, r);
        todo.push_back(p);
      }
  }
  std::sort(v.stalled.begin(), v.stalled.end());
  if (v.stalled.empty()) {
    std::vector<int> all;
    for (auto& [r, w] : waits) all.push_back(r);
    v.explanation =
        Ranks(all) + " all wait for one another: did every rank call the same collectives in the same order?";
    return v;
  }
  // The chain from this rank to the first stalled one: "rank 0 waits for 1, 1 for 2".
  std::vector<int> path{v.stalled.front()};
  while (path.back() != rank) path.push_back(reached_from.at(path.back()));
  std::reverse(path.begin(), path.end());
  std::string chain = "rank " + std::to_string(path[0]) + " waits for " + std::to_string(path[1]);
  for (size_t i = 1; i + 1 < path.size(); ++i) {
    chain.append(", ").append(std::to_string(path[i])).append(" for ").append(std::to_string(path[i + 1]));
  }
  v.explanation = Ranks(v.stalled) + (v.stalled.size() > 1 ? " are" : " is") + " not making progress (" + chain + ")";
  (void)store.Set(prefix + "stalled/" + std::to_string(rank), RankListText(v.stalled));
  return v;
}

}  // namespace hoop
