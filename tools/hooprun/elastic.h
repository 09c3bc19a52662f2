// Elastic hooprun (--min-np, --max-np, --host-discovery-script, horovodrun's flags): the job goes
// on while at least --min-np ranks live. hooprun starts newcomers into the running job, each with
// HOOP_JOIN=1 and the next number in the job as HOOP_RANK: a replacement for every rank that
// fails, on the first listed host with a free slot (its own host, whose slot the failure freed,
// unless that host was dropped), and ranks on hosts the discovery script adds while the job is
// under --max-np. Newcomers queue at the job's store (collectives/core/grow.cc) until the ranks'
// next grow admits them. The job's Job (job.h) acts; what to do is decided here, by pure
// functions the unit tests check.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tools/hooprun/hosts.h"

namespace hoop::run {

// How the discovery script's hosts differ from the last ones.
struct HostsChange {
  std::vector<HostSlots> added;      // listed now, not before
  std::vector<std::string> removed;  // listed before, not now
  std::vector<HostSlots> resized;    // listed with other slots
  bool empty() const { return added.empty() && removed.empty() && resized.empty(); }
};
HostsChange CompareHosts(const std::vector<HostSlots>& before, const std::vector<HostSlots>& after);

// Where the next newcomer goes: the first host, in listed order, with fewer `live` ranks than
// slots and not in `resting` (a host where a start just failed); "" when there is none.
std::string FreeHost(const std::vector<HostSlots>& hosts, const std::map<std::string, int>& live,
                     const std::vector<std::string>& resting = {});

// The ranks the job aims at: every listed slot, at most `max_np` (0: no bound).
int AimedRanks(const std::vector<HostSlots>& hosts, int max_np);

// "rank 3", "ranks 1, 2"
std::string RankList(const std::vector<int>& ranks);

}  // namespace hoop::run
