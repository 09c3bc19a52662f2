#include "tools/hooprun/elastic.h"

#include <algorithm>
#include <climits>

namespace hoop::run {

HostsChange CompareHosts(const std::vector<HostSlots>& before, const std::vector<HostSlots>& after) {
  HostsChange c;
  auto find = [](const std::vector<HostSlots>& in, const std::string& host) -> const HostSlots* {
    for (const HostSlots& h : in)
      if (h.host == host) return &h;
    return nullptr;
  };
  for (const HostSlots& h : after) {
    const HostSlots* old = find(before, h.host);
    if (!old)
      c.added.push_back(h);
    else if (old->slots != h.slots)
      c.resized.push_back(h);
  }
  for (const HostSlots& h : before)
    if (!find(after, h.host)) c.removed.push_back(h.host);
  return c;
}

std::string FreeHost(const std::vector<HostSlots>& hosts, const std::map<std::string, int>& live,
                     const std::vector<std::string>& resting) {
  for (const HostSlots& h : hosts) {
    if (std::find(resting.begin(), resting.end(), h.host) != resting.end()) continue;
    auto it = live.find(h.host);
    if ((it == live.end() ? 0 : it->second) < h.slots) return h.host;
  }
  return "";
}

int AimedRanks(const std::vector<HostSlots>& hosts, int max_np) {
  long slots = 0;
  for (const HostSlots& h : hosts) slots += h.slots;
  const long bound = max_np > 0 ? max_np : INT_MAX;
  return static_cast<int>(std::min(slots, bound));
}

std::string RankList(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

}  // namespace hoop::run
