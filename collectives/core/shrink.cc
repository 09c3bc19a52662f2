// Shrinking a communicator (hoop_comm_shrink; MPI ULFM's MPIX_Comm_shrink, NCCL's
// ncclCommShrink), and the failed ranks as this rank sees them.
//
// The survivors agree through the store, never through the connections, which a loss or a
// revocation has left unusable; the new communicator makes connections of its own. A shrink runs
// in rounds; in round r:
//  1. each survivor checks in (in/RANK, holding the ranks it knows to be gone), then waits until
//     every rank of the communicator has checked in or is known gone, or HOOP_SHRINK_WAIT has
//     passed (a stopped process, a host gone silent);
//  2. it proposes the ranks checked in and not gone (nor excluded by the caller, as PyTorch's
//     shrink_group and NCCL's ncclCommShrink name them); the store keeps the first proposal
//     (Store::SetIfAbsent) and every survivor takes that one: one membership, whoever proposed
//     it and whoever died meanwhile. A survivor left out (it came after HOOP_SHRINK_WAIT) is
//     told so;
//  3. the members make the new communicator through the store, each writes whether that worked
//     (made/RANK), and the first verdict proposed wins again: "commit" once every member made
//     it, "abort" once one failed or is gone. A member that dies inside round r so fails it for
//     all alike, and the survivors go on to round r + 1 without it.
// A member that dies after the commit leaves a communicator with a dead rank: its next call
// fails as any call with a lost peer does, and it can be shrunk in turn.
//
// Gone (FailedRanks): a peer the connections saw lost; a process on this host that exited (by
// the pid and start time each rank published when the communicator was made); a rank the
// launcher saw exit (hooprun --enable-recovery writes their job ranks to hoop/exited); and the
// ranks any member of an agreed shrink round named so at check-in: every member of a shrink goes
// on knowing at least the failures that shaped it, whichever survivor saw them.
#include <algorithm>
#include <functional>
#include <sstream>
#include <thread>

#include "collectives/core/agreement.h"
#include "collectives/core/comm_core.h"
#include "common/logging.h"
#include "transport/peer_watch.h"

namespace hoop {

namespace {
constexpr auto kLook = std::chrono::milliseconds(5);          // between looks at the store
constexpr auto kLeastMake = std::chrono::milliseconds(2000);  // making the new communicator, at least
}  // namespace

std::vector<int> CommCore::FailedRanks() {
  const int n = opts_.size;
  std::vector<bool> gone(static_cast<size_t>(n), false);
  const std::vector<int> lost = membership_.hub->Lost();
  std::vector<int> exited;
  if (auto text = Peek(*store_, "hoop/exited")) exited = ParseList(*text);
  const std::string& my_host = membership_.hosts[static_cast<size_t>(opts_.rank)];
  for (int r = 0; r < n; ++r) {
    if (r == opts_.rank) continue;
    const auto i = static_cast<size_t>(r);
    const Proc& p = membership_.procs[i];
    gone[i] = Has(lost, membership_.members[i]) || (p.job_rank >= 0 && Has(exited, p.job_rank)) ||
              (membership_.hosts[i] == my_host && ProcessGone(p.pid, p.start));
  }
  {
    std::lock_guard<std::mutex> lock(gone_mu_);
    for (int r : shrink_gone_) gone[static_cast<size_t>(r)] = true;
  }
  std::vector<int> out;
  for (int r = 0; r < n; ++r)
    if (gone[static_cast<size_t>(r)]) out.push_back(r);
  return out;
}

// The ranks the members of round `at` named gone when they checked in (each did: only ranks
// checked in are proposed) or, for the one whose proposal was taken, when it proposed: kept for
// FailedRanks.
void CommCore::NoteNamedGone(const std::string& at, const std::vector<int>& members) {
  std::vector<int> named;
  for (int m : members)
    if (auto said = Peek(*store_, at + "in/" + std::to_string(m)))
      for (int g : ParseList(*said))
        if (g >= 0 && g < opts_.size && !Has(members, g)) named.push_back(g);
  std::lock_guard<std::mutex> lock(gone_mu_);
  for (int g : named)
    if (!Has(shrink_gone_, g)) shrink_gone_.push_back(g);
}

// Step 1 and 2 of a round (above): the members, as the store keeps them for round `at`.
StatusOr<std::vector<int>> CommCore::AgreeMembers(const std::string& at, Deadline deadline,
                                                  const std::vector<int>& excluded) {
  Store& store = *store_;
  const int n = opts_.size;
  const std::string mine = at + "in/" + std::to_string(opts_.rank);
  const std::vector<int> first = FailedRanks();
  HOOP_RETURN_IF_ERROR(store.Set(mine, ListText(first)));
  std::vector<bool> in(static_cast<size_t>(n), false);
  in[static_cast<size_t>(opts_.rank)] = true;
  std::vector<int> heard;  // gone, as the ranks checked in say
  const Deadline wait = Earlier(deadline, Deadline::After(opts_.shrink_wait));
  std::vector<int> failed;
  while (true) {
    if (auto agreed = Peek(store, at + "members")) return ParseList(*agreed);
    for (int r = 0; r < n; ++r) {
      if (in[static_cast<size_t>(r)]) continue;
      auto said = Peek(store, at + "in/" + std::to_string(r));
      if (!said) continue;
      in[static_cast<size_t>(r)] = true;
      for (int g : ParseList(*said))
        if (!Has(heard, g)) heard.push_back(g);
    }
    failed = FailedRanks();
    bool settled = true;
    for (int r = 0; r < n; ++r)
      settled &= in[static_cast<size_t>(r)] || Has(failed, r) || Has(heard, r) || Has(excluded, r);
    if (settled) break;
    // Out of HOOP_TIMEOUT (earlier rounds took it): fail, rather than propose the few there now
    // and leave the others out for coming late through no fault of theirs.
    if (deadline.Expired())
      return DeadlineExceeded(opts_.timeout_name + " passed before the survivors agreed (" + at + ")");
    if (wait.Expired()) break;
    std::this_thread::sleep_for(kLook);
  }
  std::vector<int> proposal;
  for (int r = 0; r < n; ++r)
    if (in[static_cast<size_t>(r)] && (r == opts_.rank || (!Has(failed, r) && !Has(heard, r) && !Has(excluded, r))))
      proposal.push_back(r);
  // The losses behind this proposal, published before it: whoever takes it reads the members'
  // check-ins (NoteNamedGone) and so learns every one, whichever survivor saw it.
  for (int g : heard)
    if (g != opts_.rank && !Has(failed, g)) failed.push_back(g);
  std::sort(failed.begin(), failed.end());
  if (failed != first) HOOP_RETURN_IF_ERROR(store.Set(mine, ListText(failed)));
  HOOP_ASSIGN_OR_RETURN(std::string agreed, store.SetIfAbsent(at + "members", ListText(proposal), deadline));
  return ParseList(agreed);
}

// Step 3's verdict: true to keep the communicator made in round `at`.
StatusOr<bool> CommCore::AgreeMade(const std::string& at, const std::vector<int>& members, bool made,
                                   Deadline deadline) {
  const auto limit = std::max<std::chrono::milliseconds>(opts_.shrink_wait, kLeastMake);
  return AgreeOutcome(*store_, at, opts_.rank, members, made, Earlier(deadline, Deadline::After(limit)), deadline,
                      [this] { return FailedRanks(); });
}

StatusOr<std::unique_ptr<CommCore>> CommCore::Shrink(const std::vector<int>& excluded) {
  const std::string who = "rank " + std::to_string(opts_.rank) + ": shrink of communicator '" + opts_.name + "'";
  for (int r : excluded) {
    if (r < 0 || r >= opts_.size)
      return InvalidArgument(who + ": excluded rank " + std::to_string(r) + " is not a rank (0 to " +
                             std::to_string(opts_.size - 1) + ")");
    if (r == opts_.rank)
      return InvalidArgument(who + ": this rank is among those excluded (only the others call the shrink)");
  }
  const uint32_t number = shrinks_++;  // the same on every survivor: each shrink is a collective of them
  const std::string base = "hoop/" + opts_.name + "/shrink" + std::to_string(number) + "/";
  const Deadline deadline = Deadline::After(opts_.timeout);
  for (int round = 0;; ++round) {
    const std::string at = base + std::to_string(round) + "/";
    auto members = AgreeMembers(at, deadline, excluded);
    if (!members.ok() && members.status().code() == Code::kUnavailable)  // the store is gone
      return Unavailable(who + ": " + members.status().message() +
                         " (the survivors agree through the job's store; where rank 0 served it, as under mpirun, "
                         "Slurm or torchrun, its loss cannot be survived: README, \"What survives which loss\")");
    if (!members.ok()) return members.status().WithContext(who);
    NoteNamedGone(at, *members);
    const auto me = std::find(members->begin(), members->end(), opts_.rank);
    if (me == members->end())
      return Unavailable(who + ": left out: ranks " + ListText(*members) +
                         " made the new communicator without this rank, which came after HOOP_SHRINK_WAIT (" +
                         std::to_string(opts_.shrink_wait.count() / 1000.0) + " s)");
    CommOptions o = Inherited();
    o.name = opts_.name + ".s" + std::to_string(number) + "." + std::to_string(round);
    o.size = static_cast<int>(members->size());
    o.rank = static_cast<int>(me - members->begin());
    o.local_rank = o.local_size = -1;  // from the members' host names
    const auto limit = std::max<std::chrono::milliseconds>(opts_.shrink_wait, kLeastMake);
    // Give up making it once a member is gone or another gave up the round (its verdict is out).
    auto give_up = [&]() -> Status {
      for (int r : FailedRanks())
        if (Has(*members, r)) return Unavailable("rank " + std::to_string(r) + " (of this one) is gone");
      if (Peek(*store_, at + "outcome")) return Unavailable("another member gave the round up");
      return Status::Ok();
    };
    WatchfulStore watchful(*store_, give_up);
    Meeting meeting{Earlier(deadline, Deadline::After(limit)), &watchful, give_up,
                    "HOOP_SHRINK_WAIT (at least 2 s) or " + opts_.timeout_name};
    auto made = Create(*store_, o, meeting);
    auto keep = AgreeMade(at, *members, made.ok(), deadline);
    // Given up, or no verdict: what this rank made is aborted, not closed, since a close waits
    // until each member has taken what was sent to it, and they are dropping theirs too or on to
    // the next round (a 30 s wait there once left three survivors out of round 1).
    if (made.ok() && !(keep.ok() && *keep))
      (*made)->Abort(o.name + ": the shrink's round " + std::to_string(round) + " was given up");
    if (!keep.ok()) return keep.status().WithContext(who);
    if (*keep) {
      HOOP_LOG(kInfo, who << ": rank " << o.rank << " of " << o.size << " in '" << o.name << "' (ranks "
                          << ListText(*members) << " of " << opts_.size << " went on)");
      return std::move(made).value();
    }
    HOOP_LOG(kWarn, who << ": round " << round << " over ranks " << ListText(*members) << " failed ("
                        << (made.ok() ? "another member could not make it" : made.status().message())
                        << "); again without the ranks gone");
    SetLogRank(opts_.job_rank);
  }
}

}  // namespace hoop
