// The one wait behind every back end's Poll (shm, tcp, ucx, ofi, multi).
//
// Make progress and return as soon as something completed. Otherwise spin for a short while (a
// reply to a small message comes back within microseconds, and a sleep costs a wake-up on top),
// taking a slower look every few turns: hand the core over where ranks outnumber cores
// (HostCrowded), ask whether a peer's process has exited, read the clock (a passed deadline ends
// the wait there). Past the spin, sleep until the back end has news or a short while has passed
// (to look at the peers and the deadline again), then spin again. A closed SpinGate (a thread of
// hoop's working while its caller computes) skips the spins: after the first few looks, it sleeps.
//
// A back end brings the three things that differ between them, as methods of `B`:
//   Status Progress(std::vector<Completion>* out);  never blocks; appends what completed
//   void Watch(std::vector<Completion>* out);       peers' processes (rate-limited by itself)
//   Status Sleep(std::vector<Completion>* out, Deadline deadline);
//                                                    blocks until news, a back end's short while,
//                                                    or the deadline
// A Progress or Sleep that fails (not a deadline) ends the wait with its error.
#pragma once

#include <sched.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"
#include "transport/transport.h"

namespace hoop {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

struct WaitStyle {
  const char* name = "";
  std::chrono::microseconds spin{50};
  // The slower look comes every (look_mask + 1) turns: 0 for a back end whose Progress is a
  // system call anyway, more where a turn is a few loads from memory.
  unsigned look_mask = 0;
  bool crowded = false;  // HostCrowded: yield the core at every look while spinning
};

template <class B>
Status ProgressLoop(B& b, const WaitStyle& style, std::vector<Completion>* out, Deadline deadline, SpinGate gate) {
  const size_t start = out->size();
  // The spin is timed from the first slower look: what completes within the first turns never
  // reads the clock.
  std::chrono::steady_clock::time_point spin_until{};
  for (unsigned turn = 0;; ++turn) {
    Status s = b.Progress(out);
    if (!s.ok()) return s;
    if (out->size() > start) return Status::Ok();
    if ((turn & style.look_mask) != style.look_mask) {
      CpuRelax();
      continue;
    }
    if (style.crowded) ::sched_yield();
    b.Watch(out);
    if (out->size() > start) return Status::Ok();
    const auto now = std::chrono::steady_clock::now();
    // A deadline ends the spin too: a caller asking for one look (MultiTransport, every part in
    // turn) gets it, not the whole spin.
    if (now >= deadline.at()) return DeadlineExceeded(std::string(style.name) + ": no progress before the deadline");
    if (spin_until == std::chrono::steady_clock::time_point{}) spin_until = gate.Open() ? now + style.spin : now;
    if (now < spin_until) continue;
    s = b.Sleep(out, deadline);
    if (!s.ok()) return s;
    if (out->size() > start) return Status::Ok();
    spin_until = std::chrono::steady_clock::now() + (gate.Open() ? style.spin : std::chrono::microseconds(0));
  }
}

}  // namespace hoop
