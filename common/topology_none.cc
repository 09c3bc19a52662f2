// common/topology.h in a build without hwloc: no topology, so no binding.
#include "common/topology.h"

namespace hoop {

bool BuiltWithHwloc() { return false; }
StatusOr<Topology> LoadTopology(bool) { return Unimplemented("this hoop was built without hwloc (libhwloc-dev)"); }

}  // namespace hoop
