// IpcMappings: one process's CUDA IPC mappings, counted, and shared by every communicator in it.
//
// The driver maps an exporter's memory block once per process. When each communicator kept its
// own mappings, a second communicator that opened a handle the first had mapped, or the handle
// of another allocation in the same block (the driver packs small allocations into one), got
// error 208 (cudaErrorAlreadyMapped): two PyTorch process groups over the same gradients did.
// So the table is the process's (IpcMappings::Process(), the one piece of process-wide state
// here, as the driver's mappings themselves are), keyed by (exporting pid, buffer id):
//  - Open of a key already mapped returns that address and counts a reference; else it maps with
//    the caller's `open` (which picks the device). Where the driver answers that the block is
//    mapped already (kFailedPrecondition from CudaIpcOpen), it unmaps the exporter's mappings
//    that nobody references and tries once more.
//  - Release drops a reference. The caller must release only once nothing it queued still
//    reads the memory. A mapping nobody references stays cached (a training loop's next step
//    opens the same buffers), at most `max_unused` of them, the oldest unmapped first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <utility>

#include "common/status.h"

namespace hoop {

class IpcMappings {
 public:
  using Key = std::pair<int32_t, uint64_t>;  // (exporting pid, its buffer id)
  using OpenFn = std::function<StatusOr<void*>()>;
  using CloseFn = std::function<void(void*)>;

  IpcMappings(CloseFn close, size_t max_unused) : close_(std::move(close)), max_unused_(max_unused) {}
  ~IpcMappings();  // unmaps everything (tests; Process()'s table lives until exit)
  IpcMappings(const IpcMappings&) = delete;
  IpcMappings& operator=(const IpcMappings&) = delete;

  StatusOr<void*> Open(Key key, const OpenFn& open);
  void Release(Key key);

  // The process's table, over CudaIpcOpen and CudaIpcClose (common/device.h).
  static IpcMappings& Process();

  size_t mapped() const;      // tests: mappings held, referenced or not
  size_t referenced() const;  // tests: mappings someone holds

 private:
  struct Entry {
    void* ptr = nullptr;
    size_t refs = 0;
    uint64_t unused_since = 0;  // a tick: which unreferenced mapping is oldest
  };
  void UnmapUnused(int32_t pid);  // every unreferenced mapping of that exporter
  void Trim();                    // the oldest unreferenced ones beyond max_unused_

  const CloseFn close_;
  const size_t max_unused_;
  mutable std::mutex mu_;
  std::map<Key, Entry> entries_;
  uint64_t tick_ = 0;
};

}  // namespace hoop
