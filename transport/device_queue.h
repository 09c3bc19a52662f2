// A DeviceQueue is one in-order queue of device work (a CUDA stream of hoop's own on one device)
// with the memory operations the data path needs on it. The shm back end's CUDA IPC
// (shm/channel.h) and the executor's device runs (collectives/core/executor.h) queue on the same one,
// so that their work on a rank is ordered by the queue alone: a receive's copy, the reduction
// that reads it and the copy that sends the result on follow one another without a host wait.
// Only what crosses between processes needs a point in the queue (Mark/Passed): a descriptor is
// published once the work that wrote its memory has passed, and acknowledged once the work that
// read it has.
//
// Nothing here waits on the host except Drain. The transport layer only declares the interface;
// the collectives make the CUDA one (collectives/device/cuda_queue.h) and hand it down through
// TransportOptions::device, since its reductions are the collectives' kernels. Tests hand down
// a fake whose "device" is host memory and whose work runs only when a mark is asked about
// (tests/support/fake_device.h): what waits for the wrong point shows as wrong bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "common/dtype.h"
#include "common/status.h"

namespace hoop {

// A piece of device memory as a peer process on this host finds it: the allocation's CUDA IPC
// handle and where the piece lies in it. Within one process (ranks as threads) `base` is used
// as it is. The descriptor a shm slot carries.
struct IpcRef {
  int32_t pid = 0;
  uint32_t reserved = 0;
  uint64_t buffer_id = 0;  // the allocation's, unique in its process: mappings are cached by it
  uint64_t base = 0;       // the allocation's address in its process
  uint64_t offset = 0;     // of the piece from base
  char handle[64] = {};    // cudaIpcMemHandle_t
};

// Memory of another process, mapped here.
struct Mapped {
  const char* ptr = nullptr;
  bool local = true;  // on this queue's device: its kernels read it directly
};

// DeviceQueue::Scratch's buffers, one per user so none grows another's away.
enum ScratchUse : int {
  kScratchBounce = 0,  // shm channels: bytes on their way to device memory
  kScratchChunks = 1,  // the executor's staging chunks in a device run
  kScratchWork = 2,    // the collectives' working copies (a device reduce-scatter's)
  kScratchPlace = 3,   // the collectives' placements whose ranges overlap, by way of it
};

class DeviceQueue {
 public:
  virtual ~DeviceQueue() = default;
  virtual int device() const = 0;
  // Copies between any two kinds, queued. A source in host memory has been read when it returns
  // (it may be reused at once); the destination is written when the queue gets there.
  virtual Status Copy(void* dst, MemKind dst_kind, const void* src, MemKind src_kind, size_t bytes) = 0;
  // dst[i] = a[i] op b[i] on this device's memory (the host kernels' semantics and bits; divisor:
  // the average's last step), queued.
  virtual Status Reduce(DType dtype, ReduceOp op, void* dst, const void* a, const void* b, size_t n, int divisor) = 0;
  virtual bool CanReduce(DType dtype, ReduceOp op) const = 0;
  // A point in the queue after everything queued so far; Passed says, never waiting, whether the
  // queue has got there.
  virtual StatusOr<uint64_t> Mark() = 0;
  virtual StatusOr<bool> Passed(uint64_t mark) = 0;
  // Blocks until everything queued so far is done.
  virtual Status Drain() = 0;
  // Later work waits for a CUDA event (the caller's work before a call).
  virtual Status After(void* event) = 0;
  // Device memory that lives as long as the queue: buffer `which` (ScratchUse) of at least
  // `bytes`, grown (and its old memory freed, after a Drain) when asked for more.
  virtual StatusOr<char*> Scratch(int which, size_t bytes) = 0;
  // The descriptor of device memory `p` for a peer on this host.
  virtual StatusOr<IpcRef> Export(const void* p) = 0;
  // What a peer exported, mapped into this process (once per allocation; cached).
  virtual StatusOr<Mapped> Open(const IpcRef& ref) = 0;
};

// How a transport gets queues: for a device ordinal, and which device a pointer is on.
struct DeviceAccess {
  std::function<StatusOr<std::unique_ptr<DeviceQueue>>(int device)> make_queue;
  std::function<int(const void*)> device_of;  // -1: not device memory
  explicit operator bool() const { return make_queue && device_of; }
};

}  // namespace hoop

namespace hoop {

// A transport's queues, one per device, made when first asked for.
class DeviceQueues {
 public:
  explicit DeviceQueues(DeviceAccess access) : access_(std::move(access)) {}
  bool available() const { return static_cast<bool>(access_); }
  // -1: not device memory (or no access at all).
  int DeviceOf(const void* p) const { return available() ? access_.device_of(p) : -1; }
  StatusOr<DeviceQueue*> Get(int device);
  // The queue of the device already in use (the first made), else of device 0: for a message
  // from a peer's device memory to host memory here.
  StatusOr<DeviceQueue*> Any();

 private:
  DeviceAccess access_;
  std::vector<std::unique_ptr<DeviceQueue>> queues_;  // by ordinal
};

}  // namespace hoop
