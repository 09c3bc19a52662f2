// Is a "host" buffer memory this process can read? A device pointer from another process's
// address space is reported by cudaPointerGetAttributes as plain host memory; reading it would
// crash the rank. ReadableHere reads the range's first and last byte through process_vm_readv on
// this very process, which fails with EFAULT where memory is not mapped readable (nothing there,
// or addresses CUDA only reserved) instead of faulting. About 1.4 us a byte on the CI machine,
// so ReadableCache remembers the last ranges found readable: a training loop's buffers are
// checked once.
#pragma once

#include <array>
#include <cstddef>
#include <mutex>

namespace hoop {

// False when [p, p + bytes) is certainly not readable here; true where the check cannot tell
// (its system call refused, as under some seccomp filters).
bool ReadableHere(const void* p, size_t bytes);

class ReadableCache {
 public:
  bool Readable(const void* p, size_t bytes);

 private:
  std::mutex mu_;
  std::array<const void*, 8> at_{};
  std::array<size_t, 8> bytes_{};
  size_t next_ = 0;
};

}  // namespace hoop
