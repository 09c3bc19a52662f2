// kernels/device_reduce.h, device_copy.h and device_wire.h in a build without CUDA: no device
// kernels.
#include "collectives/kernels/device_copy.h"
#include "collectives/kernels/device_reduce.h"
#include "collectives/kernels/device_wire.h"

namespace hoop {
DeviceReduceFn LookupDeviceReduce(DType, ReduceOp) { return nullptr; }
const DeviceWireKernels* LookupDeviceWire(DType, Compression) { return nullptr; }
Status DeviceBatchedScaledCopy(DType, const DeviceCopyItem*, size_t, void*) {
  return Unimplemented("a batched device copy: this hoop was built without CUDA (HOOP_WITH_CUDA=OFF)");
}
}  // namespace hoop
