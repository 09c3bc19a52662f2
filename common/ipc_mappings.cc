#include "common/ipc_mappings.h"

#include <string>

#include "common/device.h"

namespace hoop {

IpcMappings::~IpcMappings() {
  for (auto& [key, e] : entries_) close_(e.ptr);
}

StatusOr<void*> IpcMappings::Open(Key key, const OpenFn& open) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    ++it->second.refs;
    return it->second.ptr;
  }
  StatusOr<void*> m = open();
  if (m.status().code() == Code::kFailedPrecondition) {
    // The block is mapped already, through a mapping of another of that exporter's allocations:
    // drop those nobody holds and try again.
    UnmapUnused(key.first);
    m = open();
    if (m.status().code() == Code::kFailedPrecondition)
      return m.status().WithContext("a mapping another communicator of this process holds covers it");
  }
  HOOP_RETURN_IF_ERROR(m.status());
  entries_.emplace(key, Entry{*m, 1, 0});
  return *m;
}

void IpcMappings::Release(Key key) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.refs == 0) return;
  if (--it->second.refs == 0) {
    it->second.unused_since = ++tick_;
    Trim();
  }
}

void IpcMappings::UnmapUnused(int32_t pid) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->first.first == pid && it->second.refs == 0) {
      close_(it->second.ptr);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

void IpcMappings::Trim() {
  size_t unused = 0;
  for (auto& [key, e] : entries_) unused += e.refs == 0;
  while (unused > max_unused_) {
    auto oldest = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->second.refs == 0 && (oldest == entries_.end() || it->second.unused_since < oldest->second.unused_since))
        oldest = it;
    close_(oldest->second.ptr);
    entries_.erase(oldest);
    --unused;
  }
}

size_t IpcMappings::mapped() const {
  std::lock_guard<std::mutex> l(mu_);
  return entries_.size();
}

size_t IpcMappings::referenced() const {
  std::lock_guard<std::mutex> l(mu_);
  size_t n = 0;
  for (auto& [key, e] : entries_) n += e.refs > 0;
  return n;
}

IpcMappings& IpcMappings::Process() {
  // Never destroyed: at exit the CUDA runtime may be gone before a static's destructor runs, and
  // the process's mappings go with it anyway.
  static IpcMappings* table = new IpcMappings(&CudaIpcClose, 64);
  return *table;
}

}  // namespace hoop
