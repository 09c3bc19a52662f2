// kernels/device_reduce.h and device_wire.h in a build without CUDA: no device
// kernels.
#include "collectives/kernels/device_reduce.h"
#include "collectives/kernels/device_wire.h"

namespace hoop {
DeviceReduceFn LookupDeviceReduce(DType, ReduceOp) { return nullptr; }
const DeviceWireKernels* LookupDeviceWire(DType, Compression) { return nullptr; }
}  // namespace hoop
