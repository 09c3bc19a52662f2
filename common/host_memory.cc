// ReadableHere and ReadableCache (host_memory.h).
#include "common/host_memory.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

namespace hoop {

namespace {
bool ByteReadable(const void* p) {
  char c;
  iovec local{&c, 1};
  iovec remote{const_cast<void*>(p), 1};
  if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1) return true;
  return errno != EFAULT;  // refused (EPERM under a seccomp filter, ENOSYS): cannot tell
}
}  // namespace

bool ReadableHere(const void* p, size_t bytes) {
  if (p == nullptr || bytes == 0) return true;
  const char* c = static_cast<const char*>(p);
  return ByteReadable(c) && ByteReadable(c + bytes - 1);
}

bool ReadableCache::Readable(const void* p, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < at_.size(); ++i)
      if (at_[i] == p && bytes_[i] >= bytes && p != nullptr) return true;
  }
  if (!ReadableHere(p, bytes)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  at_[next_] = p;
  bytes_[next_] = bytes;
  next_ = (next_ + 1) % at_.size();
  return true;
}

}  // namespace hoop
