// ShmLockRescue: frees a lock that a rank dying inside libfabric's shm provider left taken.
//
// The shm provider (Debian's libfabric 1.17) guards each endpoint's shared region with a spin
// lock in the region itself: the owner takes it to read its queue, every sender to take a slot in
// it. A process killed while it holds one leaves it taken for good, and a survivor then spins
// inside the provider, where no deadline reaches: in its next send to the dead rank (the dead
// rank's own lock), or in its own progress (its lock, taken by the dead rank as it sent).
//
// So a thread of its own watches the same-host peers (pidfds, as the transport does). When one
// exits it looks at two locks: the dead rank's (in its region, still mapped here) and this
// endpoint's own. A lock seen free at any moment after the death was not held by the dead rank
// and is left alone. One taken without a break from the death on, 200 ms for the dead rank's lock
// (only senders to a dead rank could hold it) and 500 ms and 100 looks for this endpoint's own (a
// live holder keeps it for microseconds), was taken by the dead rank: it is released, with a
// warning. The region's layout is the provider's own: the rescue runs only on libfabric 1.17, and
// only on a region whose header holds the version and the owner's pid where 1.17 puts them.
#pragma once

#include <pthread.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "transport/peer_watch.h"

namespace hoop {

class ShmLockRescue {
 public:
  // Watches on behalf of the endpoint whose region is `own_region` (its name in /dev/shm); null
  // where the layout of libfabric `fabric_version` (fi_version()) is not known.
  static std::unique_ptr<ShmLockRescue> Start(const std::string& own_region, uint32_t fabric_version);
  ~ShmLockRescue();
  // Watches rank `peer`, process `pid` on this host, whose region is `region`.
  void Watch(int peer, int pid, const std::string& region);

  // The region lock of the mapping of /dev/shm/`region` in this process, if its header is what
  // libfabric 1.17 writes for an endpoint of process `pid`; null otherwise. (Public for tests.)
  static pthread_spinlock_t* LockOf(const std::string& region, int pid);

 private:
  explicit ShmLockRescue(std::string own_region);
  void Loop();
  // Waits out the locks of the dead `peer` and of this endpoint (see the top).
  void Rescue(int peer, int pid, const std::string& region);

  std::string own_region_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  PeerWatch watch_;  // under mu_
  struct Known {
    int peer;
    int pid;
    std::string region;
  };
  std::vector<Known> known_;  // under mu_
  std::thread thread_;
};

}  // namespace hoop
