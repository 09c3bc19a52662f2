// kernels/device_reduce.h in a build without CUDA: no device kernels.
#include "collectives/kernels/device_reduce.h"

namespace hoop {
DeviceReduceFn LookupDeviceReduce(DType, ReduceOp) { return nullptr; }
}  // namespace hoop
