// kernel-bench --device cuda: each GPU reduction kernel (kernels/device_reduce.h) over device
// arrays of MIB MiB, in GB/s of bytes moved (two reads, one write), next to the limit measured
// in the same run: a device-to-device copy of the same array (cudaMemcpyAsync: one read, one
// write), timed alternately with each kernel, run for run, so that a drifting clock moves both.
// Times come from CUDA events on one stream; each figure is the median of REPEATS runs after a
// warm-up run.
#include "perf/kernel_bench_cuda.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "collectives/kernels/device_reduce.h"
#include "collectives/testing/reference.h"
#include "common/device.h"

namespace hoop {
namespace {

// Seconds `f` takes on `stream`, measured by events around it; `f` only queues work.
template <class F>
StatusOr<double> Timed(void* stream, void* start, void* end, F&& f) {
  HOOP_RETURN_IF_ERROR(CudaEventRecord(start, stream));
  HOOP_RETURN_IF_ERROR(f());
  HOOP_RETURN_IF_ERROR(CudaEventRecord(end, stream));
  HOOP_RETURN_IF_ERROR(CudaStreamSync(stream));
  HOOP_ASSIGN_OR_RETURN(float ms, CudaEventMs(start, end));
  return ms / 1e3;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Status Run(int device, size_t mib, int repeats, bool all_ops) {
  const size_t bytes = mib << 20;
  HOOP_RETURN_IF_ERROR(CudaSetDevice(device));
  HOOP_ASSIGN_OR_RETURN(void* stream, CudaStreamCreate(device));
  HOOP_ASSIGN_OR_RETURN(void* start, CudaEventCreate(true));
  HOOP_ASSIGN_OR_RETURN(void* end, CudaEventCreate(true));
  std::vector<void*> arrays;
  for (int i = 0; i < 3; ++i) {
    HOOP_ASSIGN_OR_RETURN(void* p, CudaAlloc(device, bytes));
    arrays.push_back(p);
  }
  char* a = static_cast<char*>(arrays[0]);
  char* b = static_cast<char*>(arrays[1]);
  char* d = static_cast<char*>(arrays[2]);
  auto copy = [&] { return CopyMem(d, MemKind::kCuda, a, MemKind::kCuda, bytes, stream); };
  auto rate = [&](double s, int streams) { return static_cast<double>(bytes) * streams / s / 1e9; };

  auto devices = CudaDevices();
  std::printf(
      "# kernel-bench --device cuda: device %d (%s), arrays of %zu MiB, median of %d runs, GB/s of bytes moved\n",
      device, devices.ok() ? (*devices)[static_cast<size_t>(device)].name.c_str() : "?", mib, repeats);
  std::printf(
      "# copy: cudaMemcpyAsync device to device of one array (2 streams: read + write), timed alternately\n"
      "# with each kernel; ratio: the kernel's GB/s / the copy's GB/s, run for run (median)\n");
  std::printf("# %6s %5s %10s %10s %8s\n", "dtype", "op", "kernel", "copy", "ratio");
  std::vector<ReduceOp> ops = {ReduceOp::kSum};
  if (all_ops) ops.assign(std::begin(kAllReduceOps), std::end(kAllReduceOps));
  std::vector<char> host(bytes);
  for (DType dt :
       {DType::kF32, DType::kBF16, DType::kF16, DType::kF64, DType::kI32, DType::kI64, DType::kI8, DType::kU8}) {
    const size_t es = DTypeSize(dt), n = bytes / es;
    for (ReduceOp op : ops) {
      DeviceReduceFn fn = LookupDeviceReduce(dt, op);
      if (!fn) continue;
      // The test suite's data: small integers, exact in every dtype.
      FillInput(dt, op, host.data(), n, 1);
      HOOP_RETURN_IF_ERROR(CopyMem(a, MemKind::kCuda, host.data(), MemKind::kHost, bytes, stream));
      FillInput(dt, op, host.data(), n, 2);
      HOOP_RETURN_IF_ERROR(CopyMem(b, MemKind::kCuda, host.data(), MemKind::kHost, bytes, stream));
      auto kernel = [&] { return fn(d, a, b, n, 1, stream); };
      HOOP_RETURN_IF_ERROR(Timed(stream, start, end, kernel).status());  // warm-up
      HOOP_RETURN_IF_ERROR(Timed(stream, start, end, copy).status());
      std::vector<double> tk, tc, ratio;
      for (int r = 0; r < repeats; ++r) {
        HOOP_ASSIGN_OR_RETURN(double c, Timed(stream, start, end, copy));
        HOOP_ASSIGN_OR_RETURN(double k, Timed(stream, start, end, kernel));
        tc.push_back(c);
        tk.push_back(k);
        ratio.push_back(rate(k, 3) / rate(c, 2));
      }
      std::printf("  %6s %5s %10.1f %10.1f %8.3f\n", DTypeName(dt), ReduceOpName(op), rate(Median(tk), 3),
                  rate(Median(tc), 2), Median(ratio));
    }
  }
  for (void* p : arrays) CudaFree(p, MemKind::kCuda);
  CudaEventDestroy(start);
  CudaEventDestroy(end);
  CudaStreamDestroy(stream);
  return Status::Ok();
}

}  // namespace

int RunDeviceKernelBench(int device, size_t mib, int repeats, bool all_ops) {
  Status s = Run(device, mib, repeats, all_ops);
  if (!s.ok()) {
    std::fprintf(stderr, "kernel-bench: --device cuda: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace hoop
