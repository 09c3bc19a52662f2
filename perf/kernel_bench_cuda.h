// kernel-bench --device cuda: the GPU reduction kernels next to a device-to-device copy timed
// in the same run (kernel_bench_cuda.cc).
#pragma once

#include <cstddef>

namespace hoop {
// Prints the table; 0 on success, 1 (with the reason on stderr) where there is no device.
int RunDeviceKernelBench(int device, size_t mib, int repeats, bool all_ops);
}  // namespace hoop
