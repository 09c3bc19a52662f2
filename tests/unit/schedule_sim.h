// The schedule simulator (schedule_test.cc, hierarchical_schedule_test.cc). Schedules as pure
// functions: every rank's schedule is run at once in a simulated network where
// an element is the set of ranks whose input it contains, plus a hash of the expression that
// combined them (operand order included). A reduction must join disjoint sets (nothing counted
// twice), the average's division must happen exactly once and only on a complete set, every
// message must be received exactly once, running each rank's units strictly in order must not
// deadlock (so the executor, which runs them with a window, cannot; and that order is the
// blocking interpreter's, collectives/core/blocking.cc, so Simulate covers it), and every rank must end
// with the same expression for every element (the same bits, whatever the op).
//
// The network is as unkind as the transports may be: a message is read from the sender's memory
// only when the receiver takes it (a rendezvous protocol may read that late), so a schedule that
// writes memory before its own send of it was read delivers wrong sets; a send counts as
// completed (after_sent) only once the receiver took it; and allreduce also runs in place.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/schedules/schedule.h"

namespace hoop::sim {

constexpr uint64_t kUnset = ~0ull;
constexpr uint64_t kFinal = 1ull << 63;  // the average's division was applied

struct Elem {
  uint64_t set = kUnset;  // ranks whose input it holds (| kFinal once divided)
  uint64_t expr = 0;      // hash of how they were combined, in operand order
  bool operator==(const Elem&) const = default;
};

inline uint64_t Mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
inline Elem Leaf(int rank) { return {1ull << rank, Mix(static_cast<uint64_t>(rank) + 1)}; }

using Mem = std::vector<Elem>;

struct SimResult {
  std::vector<Mem> out;         // per rank
  std::vector<uint64_t> heard;  // per rank: ranks it has (transitively) heard from
  bool ok = true;
  std::string error;
};

// in_place: each rank's `in` is its `out` (allreduce only; `out` starts as `in`).
SimResult Simulate(int n, const std::vector<Schedule>& s, std::vector<Mem> in, std::vector<Mem> out, size_t chunk,
                   bool in_place = false);

// The same network, with every rank doing its units in whatever order the executor may: a message
// is taken whenever it is on the wire, whatever the rank is waiting for (a back end completes
// receives, and one message's chunks, in any order); a unit acts once its message is in, the
// units it waits for (dep, waits) have acted and its after_sent message was taken; sends to each
// peer go out in unit order. Where the executor lands data on arrival (a copy, or a reduction
// that waits for nothing, not after its own send) it is written when taken, not when the unit
// acts. Units start in order within the executor's default window (8 receives, x the
// schedule's window_scale). Each step picks one of everything possible at random (seeded). A
// schedule correct here needs no ordering from its back end that the executor does not give.
SimResult SimulateAnyOrder(int n, const std::vector<Schedule>& s, std::vector<Mem> in, std::vector<Mem> out,
                           size_t chunk, bool in_place, uint32_t seed);

inline uint64_t All(int n) { return (1ull << n) - 1; }

inline std::vector<Mem> Own(int n, size_t count) {
  std::vector<Mem> v;
  for (int k = 0; k < n; ++k) v.emplace_back(count, Leaf(k));
  return v;
}
inline std::vector<Mem> Unset(int n, size_t count) { return std::vector<Mem>(static_cast<size_t>(n), Mem(count)); }

inline constexpr size_t kCounts[] = {0, 1, 2, 7, 10, 33, 100};
inline constexpr size_t kChunks[] = {1, 3, 1000};

}  // namespace hoop::sim
