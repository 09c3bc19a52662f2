// The store-kept agreements of shrink and grow (agreement.h says what they mean).
#include "collectives/core/agreement.h"

#include <algorithm>
#include <sstream>
#include <thread>

namespace hoop {

namespace {
constexpr auto kLook = std::chrono::milliseconds(5);  // between looks at the store
}  // namespace

std::string ListText(const std::vector<int>& v) {
  std::ostringstream out;
  for (size_t i = 0; i < v.size(); ++i) out << (i ? "," : "") << v[i];
  return out.str();
}

std::vector<int> ParseList(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');)
    if (!part.empty()) out.push_back(std::atoi(part.c_str()));
  return out;
}

bool Has(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

std::optional<std::string> Peek(Store& store, const std::string& key) {
  auto v = store.Get(key, Deadline::After(std::chrono::milliseconds(0)));
  if (!v.ok()) return std::nullopt;
  return std::move(v).value();
}

Deadline Earlier(Deadline a, Deadline b) { return a.at() < b.at() ? a : b; }

StatusOr<bool> AgreeOutcome(Store& store, const std::string& at, int me, const std::vector<int>& members, bool made,
                            Deadline wait, Deadline deadline, const std::function<std::vector<int>()>& gone) {
  HOOP_RETURN_IF_ERROR(store.Set(at + "made/" + std::to_string(me), made ? "1" : "0"));
  std::string verdict;
  while (verdict.empty()) {
    if (auto agreed = Peek(store, at + "outcome")) return *agreed == "commit";
    const std::vector<int> failed = gone();
    bool all = true, bad = false;
    for (int m : members) {
      auto said = Peek(store, at + "made/" + std::to_string(m));
      all &= said.has_value();
      bad |= said ? *said != "1" : Has(failed, m);
    }
    if (bad || (!all && wait.Expired()))
      verdict = "abort";
    else if (all)
      verdict = "commit";
    else
      std::this_thread::sleep_for(kLook);
  }
  HOOP_ASSIGN_OR_RETURN(std::string agreed, store.SetIfAbsent(at + "outcome", verdict, deadline));
  return agreed == "commit";
}

StatusOr<std::string> WatchfulStore::Get(const std::string& key, Deadline deadline) {
  while (true) {
    auto v = store_.Get(key, Earlier(deadline, Deadline::After(kLook * 4)));
    if (v.ok() || v.status().code() != Code::kDeadlineExceeded || deadline.Expired()) return v;
    HOOP_RETURN_IF_ERROR(give_up_());
  }
}

}  // namespace hoop
