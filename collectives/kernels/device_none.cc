// kernels/device_reduce.h, device_wait.h and device_wire.h in a build without CUDA: no device
// kernels.
#include "collectives/kernels/device_reduce.h"
#include "collectives/kernels/device_wait.h"
#include "collectives/kernels/device_wire.h"

namespace hoop {
DeviceReduceFn LookupDeviceReduce(DType, ReduceOp) { return nullptr; }
const DeviceWireKernels* LookupDeviceWire(DType, Compression) { return nullptr; }
Status LaunchWaitAtLeast(const uint64_t*, uint64_t, void*) {
  return Unimplemented("a CUDA stream wait: this hoop was built without CUDA (HOOP_WITH_CUDA=OFF)");
}
}  // namespace hoop
