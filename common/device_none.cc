// common/device.h in a build without CUDA (HOOP_WITH_CUDA off): every pointer is host memory,
// host-to-host copies work, and everything that needs a device says that this build has none.
#include <cstring>

#include "common/device.h"

namespace hoop {
namespace {
Status NoCuda(const char* what) {
  return Unimplemented(std::string(what) + ": this hoop was built without CUDA (HOOP_WITH_CUDA=OFF)");
}
}  // namespace

bool BuiltWithCuda() { return false; }
std::string CudaRuntimeVersion() { return ""; }
const StatusOr<int>& CudaDeviceCount() {
  static const StatusOr<int> none = NoCuda("cudaGetDeviceCount");
  return none;
}
StatusOr<std::vector<CudaDevice>> CudaDevices() { return NoCuda("listing CUDA devices"); }
StatusOr<bool> CudaPeerAccess(int, int) { return NoCuda("CUDA peer access"); }
MemInfo QueryMemory(const void*) { return {}; }
StatusOr<void*> CudaAlloc(int, size_t) { return NoCuda("cudaMalloc"); }
StatusOr<void*> CudaAllocPinned(size_t) { return NoCuda("cudaMallocHost"); }
void CudaFree(void*, MemKind) {}

Status CopyMem(void* dst, MemKind dst_kind, const void* src, MemKind src_kind, size_t bytes, void*) {
  if (bytes == 0) return Status::Ok();
  if (dst_kind != MemKind::kHost || src_kind != MemKind::kHost) return NoCuda("copying CUDA memory");
  std::memcpy(dst, src, bytes);
  return Status::Ok();
}

Status CudaMemset(void*, int, size_t, void*) { return NoCuda("cudaMemsetAsync"); }
Status CudaStreamSync(void*) { return NoCuda("cudaStreamSynchronize"); }
StatusOr<void*> CudaStreamCreate(int) { return NoCuda("cudaStreamCreate"); }
void CudaStreamDestroy(void*) {}
Status CudaSetDevice(int) { return NoCuda("cudaSetDevice"); }
StatusOr<int> CudaGetDevice() { return NoCuda("cudaGetDevice"); }
StatusOr<uint32_t*> CudaAllocWords(size_t) { return NoCuda("cudaHostAlloc"); }
void CudaFreeWords(uint32_t*) {}
Status CudaStreamWaitWord(void*, const uint32_t*, uint32_t) { return NoCuda("cuStreamWaitValue32"); }
StatusOr<void*> CudaEventCreate(bool) { return NoCuda("cudaEventCreate"); }
void CudaEventDestroy(void*) {}
Status CudaEventRecord(void*, void*) { return NoCuda("cudaEventRecord"); }
StatusOr<bool> CudaEventDone(void*) { return NoCuda("cudaEventQuery"); }
Status CudaStreamWaitEvent(void*, void*) { return NoCuda("cudaStreamWaitEvent"); }
Status CudaLaunchHostFunc(void*, void (*)(void*), void*) { return NoCuda("cudaLaunchHostFunc"); }
Status CudaEventSync(void*) { return NoCuda("cudaEventSynchronize"); }
StatusOr<float> CudaEventMs(void*, void*) { return NoCuda("cudaEventElapsedTime"); }
StatusOr<CudaIpcExport> CudaIpcGet(const void*) { return NoCuda("cudaIpcGetMemHandle"); }
StatusOr<uint64_t> CudaBufferId(const void*) { return NoCuda("cuPointerGetAttribute"); }
StatusOr<void*> CudaIpcOpen(const char (&)[64]) { return NoCuda("cudaIpcOpenMemHandle"); }
void CudaIpcClose(void*) {}

}  // namespace hoop
