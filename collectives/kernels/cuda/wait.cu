// kernels/device_wait.h: the kernel that holds a stream until the host publishes a value.
#include <cuda_runtime.h>

#include <string>

#include "collectives/kernels/device_wait.h"

namespace hoop {
namespace {

__global__ void WaitAtLeast(const volatile unsigned long long* word, unsigned long long value) {
  // A volatile read goes to the host's memory each time (pinned memory is not cached on the
  // device), so the host's store is seen within one look.
  while (*word < value) __nanosleep(1000);
}

}  // namespace

Status LaunchWaitAtLeast(const uint64_t* word, uint64_t value, void* stream) {
  WaitAtLeast<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(reinterpret_cast<const volatile unsigned long long*>(word),
                                                              static_cast<unsigned long long>(value));
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return Internal(std::string("launching the stream wait kernel: ") + cudaGetErrorString(e) + " (error " +
                    std::to_string(static_cast<int>(e)) + ")");
  return Status::Ok();
}

}  // namespace hoop
