// Futex wait/wake on a 32-bit word that may live in memory shared between processes (so the
// non-private futex operations). A waiter announces itself, re-checks for work, then sleeps on
// the word with a timeout; a poster bumps the word and wakes. Used by the shared-memory back end
// for "spin briefly, then block".
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <ctime>

namespace hoop {

static_assert(std::atomic<uint32_t>::is_always_lock_free && sizeof(std::atomic<uint32_t>) == 4);

// Sleeps while *word == expected, at most timeout_ms. Spurious returns are fine.
inline void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, int timeout_ms) {
  timespec ts{timeout_ms / 1000, static_cast<long>(timeout_ms % 1000) * 1000000L};
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

inline void FutexWakeAll(std::atomic<uint32_t>* word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// A sleeper's doorbell: `bell` is the futex word, `sleeping` says whether the owner may be asleep
// on it. Lives in shared memory; each on its own cache line.
struct alignas(64) Doorbell {
  alignas(64) std::atomic<uint32_t> bell{0};
  alignas(64) std::atomic<uint32_t> sleeping{0};
};

// Poster side: call after publishing work (the fence pairs with the sleeper's store of
// `sleeping` before its re-check, so one of the two always sees the other).
inline void Ring(Doorbell* d) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (d->sleeping.load(std::memory_order_relaxed)) {
    d->bell.fetch_add(1, std::memory_order_seq_cst);
    FutexWakeAll(&d->bell);
  }
}

}  // namespace hoop
