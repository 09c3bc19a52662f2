// A rank's place on its host, for a rank to read: the GPU it uses by default, the processors it
// is bound to, and where that GPU and the host's NICs sit (hwloc's view, common/topology.h).
//
// Local rank r uses the r-th CUDA device this process sees (r mod their count; the rank when
// the local rank is unknown), the same GPU hooprun places it near; hoop-perf and the C API's
// hoop_local_device give it. The locality is JSON (hoop_locality):
//   {"rank": 3, "local_rank": 1, "local_size": 4, "host": "node7", "bound_cpus": "8-15",
//    "gpu": {"device": 1, "name": "...", "pci": "0000:3b:00.0", "near_cpus": "0-15",
//            "near_me": true} | null, "gpu_why": "..." (when null),
//    "nics": [{"name": "ib0", "pci": "0000:5e:00.0 [15b3:1017]", "near_cpus": "0-15",
//              "near_me": true}], "topology_why": "..." (when hwloc could not say)}
// near_me: the device's nearest processors include one this rank may run on.
#pragma once

#include <string>

#include "common/status.h"

namespace hoop {

// The CUDA device local rank `local_rank` (or `rank`, when it is -1) uses by default.
// Unimplemented without CUDA, Unavailable without a device.
StatusOr<int> DefaultCudaDevice(int rank, int local_rank);

// The JSON above. Never fails: what it cannot learn is null, with the reason beside it.
std::string LocalityJson(int rank, int local_rank, int local_size);

}  // namespace hoop
