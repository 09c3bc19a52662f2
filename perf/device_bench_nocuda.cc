// hoop-bench-device built without its GPU side (no CUDA toolkit, or no cuBLAS/cuDNN found when
// hoop was configured): the CPU columns only, and the reason in the GPU's.
#include "perf/device_bench.h"

namespace hoop::bench {

std::unique_ptr<GpuBench> OpenGpu(std::string* why) {
  *why = "this hoop-bench-device was built without CUDA, cuBLAS or cuDNN";
  return nullptr;
}

}  // namespace hoop::bench
