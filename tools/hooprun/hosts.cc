#include "tools/hooprun/hosts.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "common/parse.h"

namespace hoop::run {
namespace {

constexpr int kMaxSlots = 4096;

// A host name or address as ssh takes it: letters, digits, '.', '-', '_' (no ':' or spaces).
bool PlainHost(const std::string& h) {
  if (h.empty() || h.size() > 255 || h[0] == '-') return false;
  return std::all_of(h.begin(), h.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
           c == '_';
  });
}

Status Add(std::vector<HostSlots>* hosts, const std::string& host, int slots, const std::string& where) {
  for (const HostSlots& h : *hosts)
    if (h.host == host) return InvalidArgument(where + "host '" + host + "' is listed twice");
  hosts->push_back({host, slots});
  return Status::Ok();
}

StatusOr<int> Slots(const std::string& v, const std::string& where) {
  auto n = ParseInt(v);
  if (!n || *n < 1 || *n > kMaxSlots)
    return InvalidArgument(where + "slots '" + v + "': expected a number in [1, " + std::to_string(kMaxSlots) + "]");
  return static_cast<int>(*n);
}

}  // namespace

StatusOr<std::vector<HostSlots>> ParseHostList(const std::string& spec) {
  std::vector<HostSlots> hosts;
  if (spec.empty()) return InvalidArgument("-H: no hosts given (expected HOST[:SLOTS],...)");
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    std::string item = spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::string where = "-H '" + item + "': ";
    size_t colon = item.rfind(':');
    std::string host = item.substr(0, colon);
    int slots = 1;
    if (colon != std::string::npos) {
      HOOP_ASSIGN_OR_RETURN(slots, Slots(item.substr(colon + 1), where));
    }
    if (!PlainHost(host)) return InvalidArgument(where + "expected HOST[:SLOTS] (a host name or IPv4 address)");
    HOOP_RETURN_IF_ERROR(Add(&hosts, host, slots, where));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return hosts;
}

StatusOr<std::vector<HostSlots>> ParseDiscovered(const std::string& text, int default_slots) {
  std::vector<HostSlots> hosts;
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    line = line.substr(0, line.find('#'));
    const auto first = line.find_first_not_of(" \t\r"), last = line.find_last_not_of(" \t\r");
    if (first == std::string::npos) continue;
    line = line.substr(first, last - first + 1);
    const std::string where = "--host-discovery-script printed, line " + std::to_string(n) + ", '" + line + "': ";
    const size_t colon = line.rfind(':');
    int slots = default_slots;
    if (colon != std::string::npos) {
      HOOP_ASSIGN_OR_RETURN(slots, Slots(line.substr(colon + 1), where));
    }
    const std::string host = line.substr(0, colon);
    if (!PlainHost(host)) return InvalidArgument(where + "expected HOST[:SLOTS] (a host name or IPv4 address)");
    HOOP_RETURN_IF_ERROR(Add(&hosts, host, slots, where));
  }
  return hosts;
}

StatusOr<std::vector<HostSlots>> ParseHostfile(const std::string& text, const std::string& name) {
  std::vector<HostSlots> hosts;
  std::istringstream in(text);
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    const std::string where = name + ":" + std::to_string(no) + ": ";
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string host, word;
    if (!(words >> host)) continue;  // blank or a comment
    if (!PlainHost(host)) return InvalidArgument(where + "'" + host + "' is not a host name or IPv4 address");
    int slots = 1, most = 0;
    bool said = false, said_most = false;
    while (words >> word) {
      // slots=N and max_slots=M, each once (mpirun's; "slot=" too, as OpenMPI reads it).
      const bool is_max = word.rfind("max_slots=", 0) == 0;
      const bool is_slots = word.rfind("slots=", 0) == 0 || word.rfind("slot=", 0) == 0;
      if ((!is_max && !is_slots) || (is_max && said_most) || (is_slots && said))
        return InvalidArgument(where + "unexpected '" + word + "' (expected HOST [slots=N] [max_slots=M])");
      const std::string value = word.substr(word.find('=') + 1);
      if (is_max) {
        HOOP_ASSIGN_OR_RETURN(most, Slots(value, where + "max_"));
        said_most = true;
      } else {
        HOOP_ASSIGN_OR_RETURN(slots, Slots(value, where));
        said = true;
      }
    }
    if (said_most && !said) slots = most;  // mpirun: max_slots alone gives that many slots
    if (most && slots > most)
      return InvalidArgument(where + "slots=" + std::to_string(slots) +
                             " is more than max_slots=" + std::to_string(most));
    HOOP_RETURN_IF_ERROR(Add(&hosts, host, slots, where));
    hosts.back().max_slots = most;
  }
  if (hosts.empty()) return InvalidArgument(name + ": no hosts in it");
  return hosts;
}

namespace {
// The hosts with room for `np` ranks: as given, or with --oversubscribe the ranks past the slots
// dealt one per host in turn, up to each host's max_slots.
StatusOr<std::vector<HostSlots>> Room(std::vector<HostSlots> hosts, int np, bool oversubscribe) {
  int total = 0;
  for (const HostSlots& h : hosts) total += h.slots;
  const std::string many = "-np " + std::to_string(np) + " is more ranks than the " + std::to_string(total) +
                           " slots of the host" + (hosts.size() > 1 ? "s" : "") + " given";
  if (np <= total) return hosts;
  if (!oversubscribe) return InvalidArgument(many + " (--oversubscribe places the rest beyond them, as mpirun's)");
  for (int extra = np - total; extra > 0;) {
    int placed = 0;
    for (HostSlots& h : hosts)
      if (extra > 0 && (h.max_slots == 0 || h.slots < h.max_slots)) {
        ++h.slots;
        --extra;
        ++placed;
      }
    if (placed == 0) return InvalidArgument(many + ", and their max_slots leave no room for the rest");
  }
  return hosts;
}
}  // namespace

StatusOr<std::vector<Placement>> PlaceRanks(const std::vector<HostSlots>& given, int np, MapBy map,
                                            bool oversubscribe) {
  if (given.empty()) return InvalidArgument("no hosts");
  int total = 0;
  for (const HostSlots& h : given) total += h.slots;
  if (np == 0) np = total;
  HOOP_ASSIGN_OR_RETURN(const std::vector<HostSlots> hosts, Room(given, np, oversubscribe));
  std::vector<int> host_of(static_cast<size_t>(np));
  std::vector<int> used(hosts.size(), 0);
  if (map == MapBy::kSlot) {
    size_t h = 0;
    for (int r = 0; r < np; ++r) {
      while (used[h] == hosts[h].slots) ++h;
      host_of[static_cast<size_t>(r)] = static_cast<int>(h);
      ++used[h];
    }
  } else {
    size_t h = 0;
    for (int r = 0; r < np; ++r) {
      while (used[h] == hosts[h].slots) h = (h + 1) % hosts.size();
      host_of[static_cast<size_t>(r)] = static_cast<int>(h);
      ++used[h];
      h = (h + 1) % hosts.size();
    }
  }
  std::vector<Placement> out(static_cast<size_t>(np));
  std::vector<int> seen(hosts.size(), 0);
  std::map<int, int> hosts_with_local;  // local rank -> hosts that have it so far
  for (int r = 0; r < np; ++r) {
    const size_t h = static_cast<size_t>(host_of[static_cast<size_t>(r)]);
    Placement& p = out[static_cast<size_t>(r)];
    p.host = hosts[h].host;
    p.local_rank = seen[h]++;
    p.local_size = used[h];
  }
  // Cross ranks in host order: the hosts listed first come first.
  for (size_t h = 0; h < hosts.size(); ++h)
    for (int r = 0; r < np; ++r)
      if (static_cast<size_t>(host_of[static_cast<size_t>(r)]) == h) {
        Placement& p = out[static_cast<size_t>(r)];
        p.cross_rank = hosts_with_local[p.local_rank]++;
      }
  for (Placement& p : out) p.cross_size = hosts_with_local[p.local_rank];
  return out;
}

bool IsThisHost(const std::string& host, const std::string& self, const std::vector<std::string>& addresses) {
  const bool loopback = host.rfind("127.", 0) == 0 && host.find_first_not_of("0123456789.") == std::string::npos;
  if (host == "localhost" || loopback) return true;
  for (const auto& a : addresses)
    if (host == a) return true;
  if (self.empty()) return false;
  if (host == self) return true;
  // "node1" and "node1.cluster.example": one is the other's short form.
  auto shortname = [](const std::string& s) { return s.substr(0, s.find('.')); };
  return shortname(host) == shortname(self) &&
         (host.find('.') == std::string::npos || self.find('.') == std::string::npos);
}

}  // namespace hoop::run
