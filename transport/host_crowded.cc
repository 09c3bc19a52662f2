// HostCrowded (transport.h): the ranks on this host against the cores this process may use.
#include <sched.h>

#include "transport/transport.h"

namespace hoop {

bool HostCrowded(const TransportOptions& opts) {
  int local = 0;
  for (int r = 0; r < opts.size; ++r)
    local += opts.peers.empty() ||
             opts.peers[static_cast<size_t>(r)].host == opts.peers[static_cast<size_t>(opts.rank)].host;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  return ::sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && local > CPU_COUNT(&cpus);
}

}  // namespace hoop
