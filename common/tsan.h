// ThreadSanitizer annotations for synchronisation it cannot see. Ranks that are threads of one
// process (the tests' ThreadRanks) meet through shared memory that each maps at an address of its
// own (shm segments), so a release store through one mapping and the acquire load through another
// look unrelated to TSan. Where such a handshake orders accesses to memory both threads address
// alike (a device buffer passed by CUDA IPC descriptor, transport/shm/channel.h), both sides also
// name that address here. Compiles to nothing outside TSan builds.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define HOOP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HOOP_TSAN 1
#endif
#endif

#ifdef HOOP_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace hoop {

// After this thread's last access that the handshake covers, before it signals.
inline void TsanRelease(const void* p) {
#ifdef HOOP_TSAN
  __tsan_release(const_cast<void*>(p));
#else
  (void)p;
#endif
}

// After this thread saw the signal, before its first access that the handshake covers.
inline void TsanAcquire(const void* p) {
#ifdef HOOP_TSAN
  __tsan_acquire(const_cast<void*>(p));
#else
  (void)p;
#endif
}

}  // namespace hoop
