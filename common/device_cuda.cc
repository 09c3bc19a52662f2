// common/device.h over the CUDA runtime (HOOP_WITH_CUDA builds). The runtime is linked
// statically (CUDA::cudart_static): it loads the driver (libcuda.so.1) itself on its first call,
// so a machine without one still loads libhoop, and the first call here fails with the
// runtime's "driver version is insufficient" (error 35), which CudaDeviceCount keeps and every
// later question repeats.
#include <cuda.h>  // the driver API's types only: its functions are found through the runtime
#include <cuda_runtime_api.h>

#include <cstring>

#include "common/device.h"

namespace hoop {
namespace {

Status CudaError(const char* call, cudaError_t e) {
  std::string what =
      std::string(call) + ": " + cudaGetErrorString(e) + " (error " + std::to_string(static_cast<int>(e)) + ")";
  switch (e) {
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
    case cudaErrorDevicesUnavailable: return Unavailable(what);
    case cudaErrorMemoryAllocation: return Status(Code::kUnavailable, what + ": out of device memory");
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevice:
    case cudaErrorInvalidDevicePointer: return InvalidArgument(what);
    default: return Internal(what);
  }
}

#define HOOP_CUDA_RETURN(call)                   \
  do {                                           \
    cudaError_t hoop_cuda_e = (call);            \
    if (hoop_cuda_e != cudaSuccess) {            \
      (void)cudaGetLastError(); /* not sticky */ \
      return CudaError(#call, hoop_cuda_e);      \
    }                                            \
  } while (0)

// The answer to "any devices?", asked once: the runtime's own answer does not change within a
// process, and every entry point below checks it first so that a machine without a driver
// gets the same clear reason everywhere.
const StatusOr<int>& Devices() {
  static const StatusOr<int> devices = []() -> StatusOr<int> {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return CudaError("cudaGetDeviceCount", e);
    }
    if (n == 0) return Unavailable("cudaGetDeviceCount: no CUDA device");
    return n;
  }();
  return devices;
}

cudaStream_t S(void* stream) { return static_cast<cudaStream_t>(stream); }
cudaEvent_t E(void* event) { return static_cast<cudaEvent_t>(event); }

}  // namespace

bool BuiltWithCuda() { return true; }

std::string CudaRuntimeVersion() {
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) return "?";
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

const StatusOr<int>& CudaDeviceCount() { return Devices(); }

StatusOr<std::vector<CudaDevice>> CudaDevices() {
  HOOP_ASSIGN_OR_RETURN(int n, Devices());
  std::vector<CudaDevice> out;
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp p{};
    HOOP_CUDA_RETURN(cudaGetDeviceProperties(&p, d));
    char bus[32] = {0};
    HOOP_CUDA_RETURN(cudaDeviceGetPCIBusId(bus, sizeof bus, d));
    out.push_back({d, p.name, bus, p.totalGlobalMem, p.major, p.minor});
  }
  return out;
}

StatusOr<bool> CudaPeerAccess(int a, int b) {
  HOOP_ASSIGN_OR_RETURN(int n, Devices());
  if (a < 0 || b < 0 || a >= n || b >= n)
    return InvalidArgument("CudaPeerAccess: devices " + std::to_string(a) + " and " + std::to_string(b) +
                           " (this process sees " + std::to_string(n) + ")");
  if (a == b) return true;
  int can = 0;
  HOOP_CUDA_RETURN(cudaDeviceCanAccessPeer(&can, a, b));
  return can != 0;
}

MemInfo QueryMemory(const void* p) {
  if (p == nullptr || !Devices().ok()) return {};
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();  // memory the runtime does not know: plain host memory
    return {};
  }
  switch (a.type) {
    case cudaMemoryTypeDevice: return {MemKind::kCuda, a.device};
    case cudaMemoryTypeHost: return {MemKind::kCudaPinned, -1};
    case cudaMemoryTypeManaged: return {MemKind::kCudaManaged, a.device};
    default: return {};
  }
}

StatusOr<void*> CudaAlloc(int device, size_t bytes) {
  HOOP_RETURN_IF_ERROR(CudaSetDevice(device));
  void* p = nullptr;
  HOOP_CUDA_RETURN(cudaMalloc(&p, bytes == 0 ? 1 : bytes));
  return p;
}

StatusOr<void*> CudaAllocPinned(size_t bytes) {
  HOOP_RETURN_IF_ERROR(Devices().status());
  void* p = nullptr;
  HOOP_CUDA_RETURN(cudaMallocHost(&p, bytes == 0 ? 1 : bytes));
  return p;
}

void CudaFree(void* p, MemKind kind) {
  if (p == nullptr) return;
  if (kind == MemKind::kCudaPinned)
    (void)cudaFreeHost(p);
  else
    (void)cudaFree(p);
  (void)cudaGetLastError();
}

Status CopyMem(void* dst, MemKind dst_kind, const void* src, MemKind src_kind, size_t bytes, void* stream) {
  if (bytes == 0) return Status::Ok();
  if (dst_kind == MemKind::kHost && src_kind == MemKind::kHost) {
    std::memcpy(dst, src, bytes);
    return Status::Ok();
  }
  HOOP_RETURN_IF_ERROR(Devices().status());
  // cudaMemcpyDefault: the runtime finds each side's kind from the pointer (unified addressing).
  HOOP_CUDA_RETURN(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, S(stream)));
  return Status::Ok();
}

Status CudaMemset(void* p, int byte, size_t bytes, void* stream) {
  if (bytes == 0) return Status::Ok();
  HOOP_RETURN_IF_ERROR(Devices().status());
  HOOP_CUDA_RETURN(cudaMemsetAsync(p, byte, bytes, S(stream)));
  return Status::Ok();
}

Status CudaStreamSync(void* stream) {
  HOOP_RETURN_IF_ERROR(Devices().status());
  HOOP_CUDA_RETURN(cudaStreamSynchronize(S(stream)));
  return Status::Ok();
}

StatusOr<void*> CudaStreamCreate(int device) {
  HOOP_RETURN_IF_ERROR(CudaSetDevice(device));
  cudaStream_t s = nullptr;
  HOOP_CUDA_RETURN(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return static_cast<void*>(s);
}

void CudaStreamDestroy(void* stream) {
  if (stream != nullptr) (void)cudaStreamDestroy(S(stream));
}

Status CudaSetDevice(int device) {
  HOOP_ASSIGN_OR_RETURN(int n, Devices());
  if (device < 0 || device >= n)
    return InvalidArgument("CUDA device " + std::to_string(device) + " does not exist (this process sees " +
                           std::to_string(n) + ")");
  HOOP_CUDA_RETURN(cudaSetDevice(device));
  return Status::Ok();
}

StatusOr<uint32_t*> CudaAllocWords(size_t n) {
  HOOP_RETURN_IF_ERROR(Devices().status());
  void* p = nullptr;
  HOOP_CUDA_RETURN(cudaHostAlloc(&p, n * sizeof(uint32_t), cudaHostAllocMapped | cudaHostAllocPortable));
  std::memset(p, 0, n * sizeof(uint32_t));
  return static_cast<uint32_t*>(p);
}

void CudaFreeWords(uint32_t* words) {
  if (words == nullptr) return;
  (void)cudaFreeHost(words);
  (void)cudaGetLastError();
}

namespace {
using WaitValue32 = CUresult(CUDAAPI*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
using GetAddressRange = CUresult(CUDAAPI*)(CUdeviceptr*, size_t*, CUdeviceptr);
using PointerGetAttribute = CUresult(CUDAAPI*)(void*, CUpointer_attribute, CUdeviceptr);
// A driver function from the driver the runtime loaded (no link against libcuda).
template <class F>
StatusOr<F> DriverFn(const char* name, int version) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  HOOP_CUDA_RETURN(cudaGetDriverEntryPointByVersion(name, &fn, version, cudaEnableDefault, &q));
  if (q != cudaDriverEntryPointSuccess || fn == nullptr)
    return Unimplemented(std::string(name) + ": not found in this CUDA driver");
  return reinterpret_cast<F>(fn);
}
Status DriverError(const char* call, CUresult r) {
  const std::string what = std::string(call) + ": CUDA driver error " + std::to_string(static_cast<int>(r));
  return r == CUDA_ERROR_INVALID_VALUE ? InvalidArgument(what) : Internal(what);  // not device memory, say
}
// cuStreamWaitValue32, found once.
StatusOr<WaitValue32> FindWaitValue32() {
  static const StatusOr<WaitValue32> found = [] {
    StatusOr<WaitValue32> f = DriverFn<WaitValue32>("cuStreamWaitValue32", 12000);
    if (!f.ok() && f.status().code() == Code::kUnimplemented)
      return StatusOr<WaitValue32>(Unimplemented(f.status().message() + " (stream memory operations)"));
    return f;
  }();
  return found;
}
}  // namespace

Status CudaStreamWaitWord(void* stream, const uint32_t* word, uint32_t value) {
  HOOP_RETURN_IF_ERROR(Devices().status());
  HOOP_ASSIGN_OR_RETURN(WaitValue32 wait, FindWaitValue32());
  void* dev = nullptr;
  HOOP_CUDA_RETURN(cudaHostGetDevicePointer(&dev, const_cast<uint32_t*>(word), 0));
  const CUresult r =
      wait(static_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(dev), value, CU_STREAM_WAIT_VALUE_GEQ);
  if (r != CUDA_SUCCESS)
    return Internal("cuStreamWaitValue32: CUDA driver error " + std::to_string(static_cast<int>(r)));
  return Status::Ok();
}

StatusOr<int> CudaGetDevice() {
  HOOP_RETURN_IF_ERROR(Devices().status());
  int d = -1;
  HOOP_CUDA_RETURN(cudaGetDevice(&d));
  return d;
}

StatusOr<void*> CudaEventCreate(bool timing) {
  HOOP_RETURN_IF_ERROR(Devices().status());
  cudaEvent_t e = nullptr;
  HOOP_CUDA_RETURN(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  return static_cast<void*>(e);
}

void CudaEventDestroy(void* event) {
  if (event != nullptr) (void)cudaEventDestroy(E(event));
}

Status CudaEventRecord(void* event, void* stream) {
  HOOP_CUDA_RETURN(cudaEventRecord(E(event), S(stream)));
  return Status::Ok();
}

StatusOr<bool> CudaEventDone(void* event) {
  cudaError_t e = cudaEventQuery(E(event));
  if (e == cudaSuccess) return true;
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  HOOP_CUDA_RETURN(e);
  return false;
}

Status CudaStreamWaitEvent(void* stream, void* event) {
  HOOP_CUDA_RETURN(cudaStreamWaitEvent(S(stream), E(event), 0));
  return Status::Ok();
}

Status CudaLaunchHostFunc(void* stream, void (*fn)(void*), void* arg) {
  HOOP_CUDA_RETURN(cudaLaunchHostFunc(S(stream), fn, arg));
  return Status::Ok();
}

Status CudaEventSync(void* event) {
  HOOP_CUDA_RETURN(cudaEventSynchronize(E(event)));
  return Status::Ok();
}

StatusOr<float> CudaEventMs(void* start, void* end) {
  float ms = 0;
  HOOP_CUDA_RETURN(cudaEventElapsedTime(&ms, E(start), E(end)));
  return ms;
}

StatusOr<uint64_t> CudaBufferId(const void* p) {
  HOOP_RETURN_IF_ERROR(Devices().status());
  static const StatusOr<PointerGetAttribute> attr = DriverFn<PointerGetAttribute>("cuPointerGetAttribute", 12000);
  HOOP_RETURN_IF_ERROR(attr.status());
  unsigned long long id = 0;
  if (CUresult r = (*attr)(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, reinterpret_cast<CUdeviceptr>(p)); r != CUDA_SUCCESS)
    return DriverError("cuPointerGetAttribute(BUFFER_ID)", r);
  return static_cast<uint64_t>(id);
}

StatusOr<CudaIpcExport> CudaIpcGet(const void* p) {
  static const StatusOr<GetAddressRange> range = DriverFn<GetAddressRange>("cuMemGetAddressRange", 12000);
  HOOP_ASSIGN_OR_RETURN(uint64_t id, CudaBufferId(p));
  HOOP_RETURN_IF_ERROR(range.status());
  CudaIpcExport x;
  const auto dptr = reinterpret_cast<CUdeviceptr>(p);
  CUdeviceptr base = 0;
  size_t size = 0;
  if (CUresult r = (*range)(&base, &size, dptr); r != CUDA_SUCCESS) return DriverError("cuMemGetAddressRange", r);
  cudaIpcMemHandle_t h{};
  HOOP_CUDA_RETURN(cudaIpcGetMemHandle(&h, reinterpret_cast<void*>(base)));
  static_assert(sizeof h == sizeof x.handle);
  std::memcpy(x.handle, &h, sizeof h);
  x.buffer_id = id;
  x.base = static_cast<uint64_t>(base);
  x.offset = static_cast<size_t>(dptr - base);
  x.size = size;
  return x;
}

StatusOr<void*> CudaIpcOpen(const char (&handle)[64]) {
  HOOP_RETURN_IF_ERROR(Devices().status());
  cudaIpcMemHandle_t h{};
  std::memcpy(&h, handle, sizeof h);
  void* p = nullptr;
  const cudaError_t e = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
  if (e == cudaErrorAlreadyMapped) {
    (void)cudaGetLastError();
    return Status(Code::kFailedPrecondition,
                  "cudaIpcOpenMemHandle: this process maps that memory already, through another allocation's handle "
                  "(error 208)");
  }
  HOOP_CUDA_RETURN(e);
  return p;
}

void CudaIpcClose(void* mapped) {
  if (mapped == nullptr) return;
  (void)cudaIpcCloseMemHandle(mapped);
  (void)cudaGetLastError();
}

}  // namespace hoop
