#include "transport/select.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "common/logging.h"
#include "transport/multi_transport.h"

namespace hoop {
namespace {

// The match word of the confirmation exchange below (ofi reserves all ones for its aborts and ~2
// for its returned credit; the collectives' words for their first operation are far from this one).
constexpr uint64_t kConfirmMatch = ~uint64_t{1};

// Every rank sends an empty message to every peer over the connection just made and takes one
// from each. A rank returns only once every peer has attached to it (to send, a peer must have
// mapped our segment or created its endpoint) and it to every peer, so no rank can finalize and
// take its segment or worker away while a peer is still connecting, on any back end.
Status ConfirmConnections(Transport& t, const TransportOptions& opts, Deadline deadline) {
  HOOP_ASSIGN_OR_RETURN(const Region none, t.Register(nullptr, 0, MemKind::kHost));
  const Tag tag{kConfirmMatch, 0};
  size_t pending = 0;
  std::vector<bool> heard(static_cast<size_t>(opts.size), false);
  for (int r = 0; r < opts.size; ++r) {
    if (r == opts.rank) continue;
    Endpoint* ep = t.endpoint(r);
    if (!ep) return Internal("no connection to rank " + std::to_string(r) + " after connecting");
    ep->PostRecv(none, 0, 0, tag, static_cast<uint64_t>(r) << 1);
    ep->PostSend(none, 0, 0, tag, (static_cast<uint64_t>(r) << 1) | 1);
    pending += 2;
  }
  std::vector<Completion> done;
  while (pending > 0) {
    done.clear();
    // With a give_up, in slices that ask it between them.
    const Deadline slice = Deadline::After(std::chrono::milliseconds(20));
    const bool sliced = opts.give_up && slice.at() < deadline.at();
    Status s = t.Poll(&done, sliced ? slice : deadline);
    if (!s.ok() && sliced && s.code() == Code::kDeadlineExceeded) {
      if (Status stop = opts.give_up(); !stop.ok()) return stop.WithContext("confirming the new connections");
      continue;
    }
    if (!s.ok()) {
      std::string missing;
      for (int r = 0; r < opts.size; ++r)
        if (r != opts.rank && !heard[static_cast<size_t>(r)])
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      return DeadlineExceeded("no word over the new connections from rank(s) " + missing + " before the deadline (" +
                              opts.timeout_name + "): did they fail to start?");
    }
    for (const Completion& c : done) {
      if (!c.status.ok())
        return c.status.WithContext(std::string(c.is_send ? "confirming the connection to" : "waiting for word from") +
                                    " rank " + std::to_string(c.peer));
      if (!c.is_send) heard[static_cast<size_t>(c.peer)] = true;
      --pending;
    }
  }
  return Status::Ok();
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) {
    if (!s.empty()) s += ", ";
    s += x;
  }
  return s.empty() ? "none" : s;
}

struct Record {
  int size = 0;
  std::map<std::string, std::string> addr;  // back end -> address
  std::vector<std::string> order;
};

StatusOr<Record> ParseRecord(const std::string& text) {
  std::istringstream is(text);
  Record r;
  if (!(is >> r.size)) return InvalidArgument("malformed address record '" + text + "'");
  std::string item;
  while (is >> item) {
    size_t eq = item.find('=');
    if (eq == std::string::npos) return InvalidArgument("malformed address record '" + text + "'");
    r.addr[item.substr(0, eq)] = item.substr(eq + 1);
    r.order.push_back(item.substr(0, eq));
  }
  return r;
}

}  // namespace

namespace {

// HOOP_TRANSPORT names one back end for every peer, or a list (shm,tcp) tried in its order per
// peer, as the built-in order is without it: the names to try, in order.
StatusOr<std::vector<std::string>> BackEndsToTry(const std::string& forced) {
  std::vector<std::string> names = RegisteredTransports();
  if (forced.empty()) return names;
  const bool one = forced.find(',') == std::string::npos;
  std::vector<std::string> listed;
  std::istringstream items(forced);
  for (std::string x; std::getline(items, x, ',');) {
    bool known = false;
    for (auto& b : names) known |= b == x;
    if (!known)
      return InvalidArgument("HOOP_TRANSPORT=" + forced +
                             (one ? std::string(": no such back end") : ": no back end '" + x + "'") +
                             " is built in (built in: " + Join(names) + ")");
    listed.push_back(x);
  }
  return listed;
}

// Creates back ends in priority order while some peer is not covered by one.
StatusOr<std::vector<std::unique_ptr<Transport>>> CreateCovering(const std::vector<std::string>& names,
                                                                 const TransportOptions& opts,
                                                                 const std::string& forced) {
  const size_t n = static_cast<size_t>(opts.size);
  const PeerInfo& self = opts.peers[static_cast<size_t>(opts.rank)];
  const bool one = !forced.empty() && forced.find(',') == std::string::npos;
  std::vector<std::unique_ptr<Transport>> parts;
  std::vector<bool> covered(n, false);
  covered[static_cast<size_t>(opts.rank)] = true;
  std::vector<std::string> skipped;
  auto all_covered = [&] { return std::find(covered.begin(), covered.end(), false) == covered.end(); };
  for (const auto& name : names) {
    if (all_covered() && !(opts.size == 1 && parts.empty())) break;
    auto t = CreateTransport(name, opts);
    if (!t.ok()) {
      if (!forced.empty())
        return t.status().WithContext("HOOP_TRANSPORT=" + forced + (one ? std::string() : ": " + name) +
                                      " is unavailable");
      HOOP_LOG(kInfo, "back end " << name << " unavailable: " << t.status().message());
      skipped.push_back(name + " (" + t.status().message() + ")");
      continue;
    }
    bool useful = opts.size == 1;
    for (size_t r = 0; r < n; ++r) {
      if (covered[r] || !(*t)->CanConnect(self, opts.peers[r])) continue;
      covered[r] = true;
      useful = true;
    }
    for (size_t r = 0; one && r < n; ++r)
      if (!covered[r])
        return InvalidArgument("HOOP_TRANSPORT=" + forced + " cannot reach rank " + std::to_string(r) + " (on host " +
                               opts.peers[r].host + "; this rank is on " + self.host + ")");
    if (useful) parts.push_back(std::move(t).value());
  }
  if (!all_covered() || parts.empty())
    return Unavailable("no back end reaches every peer (tried: " + Join(skipped) + ")");
  return parts;
}

// Each peer's back end (an index into parts, -1 for this rank) and its address there.
struct Choice {
  std::vector<int> part;
  std::vector<std::string> addr;
};

// Publishes what this rank created and reads every peer's record: the first back end both
// have that can reach the peer.
StatusOr<Choice> ChooseBackEnds(Store& store, const std::string& prefix, const TransportOptions& opts,
                                const std::vector<std::unique_ptr<Transport>>& parts, Deadline deadline) {
  const int me = opts.rank;
  const size_t n = static_cast<size_t>(opts.size);
  const PeerInfo& self = opts.peers[static_cast<size_t>(me)];
  std::ostringstream rec;
  rec << opts.size;
  for (auto& p : parts) rec << " " << p->Name() << "=" << p->Address();
  HOOP_RETURN_IF_ERROR(store.Set(prefix + "addr/" + std::to_string(me), rec.str()));
  Choice c{std::vector<int>(n, -1), std::vector<std::string>(n)};
  for (size_t r = 0; r < n; ++r) {
    if (static_cast<int>(r) == me) continue;
    auto v = store.Get(prefix + "addr/" + std::to_string(r), deadline);
    if (!v.ok()) return v.status().WithContext("waiting for rank " + std::to_string(r));
    HOOP_ASSIGN_OR_RETURN(Record peer, ParseRecord(*v));
    if (peer.size != opts.size)
      return InvalidArgument("rank " + std::to_string(r) + " was started with size " + std::to_string(peer.size) +
                             ", this rank with " + std::to_string(opts.size));
    for (size_t i = 0; i < parts.size() && c.part[r] < 0; ++i) {
      auto it = peer.addr.find(parts[i]->Name());
      if (it == peer.addr.end() || !parts[i]->CanConnect(self, opts.peers[r])) continue;
      c.part[r] = static_cast<int>(i);
      c.addr[r] = it->second;
    }
    if (c.part[r] < 0) {
      std::vector<std::string> mine;
      for (auto& p : parts) mine.push_back(p->Name());
      return Unavailable("rank " + std::to_string(r) + " and this rank share no back end (this rank has " + Join(mine) +
                         "; rank " + std::to_string(r) + " has " + Join(peer.order) + ")");
    }
  }
  if (LogEnabled(LogLevel::kDebug))
    for (size_t r = 0; r < n; ++r)
      if (c.part[r] >= 0)
        HOOP_LOG(kDebug, "peer rank " << r << " (host " << opts.peers[r].host << "): back end "
                                      << parts[static_cast<size_t>(c.part[r])]->Name() << ", its address "
                                      << c.addr[r]);
  return c;
}

// Connects, back end by back end: dials the higher ranks first, then accepts the lower ones, so
// the chain of TCP dials always finds someone accepting (the others do not block).
Status ConnectChosen(std::vector<std::unique_ptr<Transport>>& parts, const Choice& c, const TransportOptions& opts,
                     Deadline deadline) {
  const int me = opts.rank;
  for (size_t i = 0; i < parts.size(); ++i) {
    for (int r = me + 1; r < opts.size; ++r)
      if (c.part[static_cast<size_t>(r)] == static_cast<int>(i))
        HOOP_RETURN_IF_ERROR(parts[i]->Connect(r, c.addr[static_cast<size_t>(r)], deadline));
    for (int r = me - 1; r >= 0; --r)
      if (c.part[static_cast<size_t>(r)] == static_cast<int>(i))
        HOOP_RETURN_IF_ERROR(parts[i]->Connect(r, c.addr[static_cast<size_t>(r)], deadline));
  }
  return Status::Ok();
}

// The back ends some peer uses (a peer may lack one this rank created), as one Transport.
std::unique_ptr<Transport> KeepUsed(std::vector<std::unique_ptr<Transport>> parts, std::vector<int> choice,
                                    const TransportOptions& opts) {
  std::vector<std::unique_ptr<Transport>> used;
  std::vector<int> remap(parts.size(), -1);
  for (size_t i = 0; i < parts.size(); ++i) {
    bool any = opts.size == 1 && i == 0;
    for (int c : choice) any |= c == static_cast<int>(i);
    if (!any) continue;
    remap[i] = static_cast<int>(used.size());
    used.push_back(std::move(parts[i]));
  }
  if (used.size() == 1) return std::move(used[0]);
  for (int& c : choice)
    if (c >= 0) c = remap[static_cast<size_t>(c)];
  return std::unique_ptr<Transport>(new MultiTransport(std::move(used), std::move(choice)));
}

}  // namespace

StatusOr<std::unique_ptr<Transport>> ConnectPeers(Store& store, const std::string& prefix, const TransportOptions& opts,
                                                  const std::string& forced, Deadline deadline) {
  HOOP_ASSIGN_OR_RETURN(std::vector<std::string> names, BackEndsToTry(forced));
  HOOP_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Transport>> parts, CreateCovering(names, opts, forced));
  HOOP_ASSIGN_OR_RETURN(Choice choice, ChooseBackEnds(store, prefix, opts, parts, deadline));
  HOOP_RETURN_IF_ERROR(ConnectChosen(parts, choice, opts, deadline));
  std::unique_ptr<Transport> out = KeepUsed(std::move(parts), std::move(choice.part), opts);
  HOOP_RETURN_IF_ERROR(ConfirmConnections(*out, opts, deadline));
  out->AllConnected();
  return out;
}

}  // namespace hoop
