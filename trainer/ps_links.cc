#include "trainer/ps_links.h"

#include <algorithm>
#include <chrono>
#include <string>

namespace hoop::train {

StatusOr<PsLinks> ConnectPs(const Communicator& job, int servers) {
  PsLinks links;
  links.servers = servers;
  links.workers = job.size() - servers;
  const int me = job.rank();
  auto make = [&](const std::string& suffix, int rank, int size,
                  bool patient) -> StatusOr<std::unique_ptr<Communicator>> {
    CommOptions o = job.options();
    o.name += "/ps/" + suffix;
    o.rank = rank;
    o.size = size;
    // The servers' link carries one message an epoch (rank 0's request for the shards), and an
    // epoch of a large model outlasts HOOP_TIMEOUT: a server that dies is still seen at once,
    // by its connection.
    if (patient) o.timeout = std::max<std::chrono::milliseconds>(o.timeout, std::chrono::hours(24 * 7));
    o.local_rank = o.local_size = -1;  // found from the host names, among these ranks
    auto c = Communicator::Create(job.store(), o);
    if (!c.ok())
      return c.status().WithContext("rank " + std::to_string(me) + ": connecting the parameter servers' " + suffix);
    return c;
  };
  for (int s = 0; s < servers; ++s) {
    for (int w = servers; w < job.size(); ++w) {
      if (me != s && me != w) continue;
      HOOP_ASSIGN_OR_RETURN(auto c,
                            make("link-" + std::to_string(s) + "-" + std::to_string(w), me == s ? 0 : 1, 2, false));
      links.peers.push_back(std::move(c));
    }
  }
  if (me < servers && servers > 1) {
    HOOP_ASSIGN_OR_RETURN(links.among_servers, make("servers", me, servers, true));
  }
  return links;
}

}  // namespace hoop::train
