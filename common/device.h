// CUDA as hoop sees it: whether this build has it, whether this machine has a driver and
// devices, what a pointer points at, and the memory operations of the data path (allocation,
// copies between kinds on a stream, stream order). One interface, two builds of it:
// device_cuda.cc where HOOP_WITH_CUDA is on (the CUDA runtime linked statically, so libhoop
// loads and serves host memory on a machine with no driver: the first question answered here
// then says why there are no devices), device_none.cc where it is off (every answer: built
// without CUDA). Callers never include a CUDA header: a stream is a `void*` (a cudaStream_t;
// nullptr is CUDA's legacy default stream).
//
// Errors name the CUDA call and carry the runtime's own words and code, e.g.
// "cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version (error 35)".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/status.h"

namespace hoop {

// Whether this build has the CUDA parts (HOOP_WITH_CUDA).
bool BuiltWithCuda();
// The CUDA runtime's version this build links, as "13.0" ("" without CUDA).
std::string CudaRuntimeVersion();

// How many devices this process sees, or why none: Unimplemented (built without CUDA) or
// Unavailable (no driver, no device, the runtime's error). Asked once; the answer is kept, and
// handed out by reference: a collective asks on every call (HostReadable), and a copy of the
// reason is a string copy.
const StatusOr<int>& CudaDeviceCount();

struct CudaDevice {
  int ordinal = -1;
  std::string name;        // "NVIDIA H100 80GB HBM3"
  std::string pci_bus_id;  // "0000:18:00.0"
  size_t memory_bytes = 0;
  int cc_major = 0, cc_minor = 0;  // compute capability
};
StatusOr<std::vector<CudaDevice>> CudaDevices();
// Whether device `a` can map device `b`'s memory (peer access; true for a == b).
StatusOr<bool> CudaPeerAccess(int a, int b);

// Where a buffer lives, found out rather than told.
struct MemInfo {
  MemKind kind = MemKind::kHost;
  int device = -1;  // the ordinal for device and managed memory; -1 for host memory
};
// What `p` points at: device memory (with its device), pinned host memory, managed memory, or
// plain host memory (also whenever CUDA is not built in or has no driver, and for nullptr).
MemInfo QueryMemory(const void* p);

// ---- memory operations ----
// Device memory on `device`, or pinned (page-locked, device-visible) host memory.
StatusOr<void*> CudaAlloc(int device, size_t bytes);
StatusOr<void*> CudaAllocPinned(size_t bytes);
// Frees what CudaAlloc or CudaAllocPinned gave (nullptr: nothing).
void CudaFree(void* p, MemKind kind);
// Copies `bytes` between any two kinds, queued on `stream` (device memory involved) or at once
// (host to host: a plain memcpy, and `stream` is not used).
Status CopyMem(void* dst, MemKind dst_kind, const void* src, MemKind src_kind, size_t bytes, void* stream);
// Fills device memory with a byte, queued on `stream`.
Status CudaMemset(void* p, int byte, size_t bytes, void* stream);
// Waits for everything queued on `stream` so far.
Status CudaStreamSync(void* stream);
// A stream of hoop's own on `device` (non-blocking with respect to the legacy default stream).
StatusOr<void*> CudaStreamCreate(int device);
void CudaStreamDestroy(void* stream);
// Makes `device` the calling thread's current one.
Status CudaSetDevice(int device);
// The calling thread's current device.
StatusOr<int> CudaGetDevice();

// Events: a point in a stream that another stream or the host can wait for.
StatusOr<void*> CudaEventCreate(bool timing);
void CudaEventDestroy(void* event);
Status CudaEventRecord(void* event, void* stream);
// True once the work before the event has finished; never blocks.
StatusOr<bool> CudaEventDone(void* event);
Status CudaStreamWaitEvent(void* stream, void* event);
// Queues `fn(arg)` on `stream`: it runs on a thread of CUDA's once the work before it is done, and
// the stream's later work waits until it returns (it must make no CUDA call).
Status CudaLaunchHostFunc(void* stream, void (*fn)(void*), void* arg);
// Words of host memory a device reads while it runs (pinned and mapped), zeroed, and their freeing
// (which waits for the device, as freeing pinned memory does).
StatusOr<uint32_t*> CudaAllocWords(size_t n);
void CudaFreeWords(uint32_t* words);
// Makes `stream`'s later work wait, on the device, until `*word` >= value (as 32-bit integers that
// wrap: (int32_t)(*word - value) >= 0): cuStreamWaitValue32. No host thread waits for it; the host
// lets the stream go by storing the value.
Status CudaStreamWaitWord(void* stream, const uint32_t* word, uint32_t value);
// Blocks the calling thread until the work before the event has finished.
Status CudaEventSync(void* event);
// Milliseconds between two recorded timing events (after both have finished).
StatusOr<float> CudaEventMs(void* start, void* end);

// ---- CUDA IPC (legacy handles) ----
// The allocation that holds a device pointer, as another process on this host can map it.
struct CudaIpcExport {
  char handle[64] = {};    // cudaIpcMemHandle_t of the allocation
  uint64_t buffer_id = 0;  // unique per allocation in this process, never reused (a cache key)
  uint64_t base = 0;       // the allocation's address here
  size_t offset = 0;       // of the pointer from base
  size_t size = 0;         // of the allocation
};
StatusOr<CudaIpcExport> CudaIpcGet(const void* p);
// The buffer id of the allocation holding device pointer `p` (one cheap driver call: what tells
// a cached export from a new allocation at the same address).
StatusOr<uint64_t> CudaBufferId(const void* p);
// Maps what another process exported into this one, on the calling thread's current device (with
// peer access enabled lazily where devices differ); unmapped by CudaIpcClose. kFailedPrecondition:
// this process already maps the memory behind the handle through another one (the driver packs
// small allocations into one block and maps a block once per process: a mapping kept for a freed
// allocation of the exporter's can hold the block a new one lies in); close that one and retry.
StatusOr<void*> CudaIpcOpen(const char (&handle)[64]);
void CudaIpcClose(void* mapped);

}  // namespace hoop
