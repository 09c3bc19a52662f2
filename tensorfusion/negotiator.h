// One negotiation cycle's exchanges over the communicator, the same on every rank.
//
// The fast path, every cycle: one allreduce (min) of a byte vector,
//   [0]      0 if some rank needs the coordinator this cycle (an uncached request, or rank 0's
//            table still holds undecided names), else 1
//   [1]      the lowest rank that asked to shut down (255: none; ranks past 254 count as 254)
//   [2]      0 if this rank has joined (Runtime::Join) and the join has not ended, else 1
//   [3 + s]  1 if this rank has the tensor of cache slot s ready (response_cache.h)
// The minimum over ranks is the AND of the readiness bits and, inverted, the OR of the flags, so
// in steady state one tiny collective settles a whole cycle.
//
// The slow path, only when byte 0 says so: every rank's uncached requests go to rank 0 (an
// allgather of their lengths, then of the requests padded to the longest), rank 0 adds them to
// its message table and decides, and broadcasts the responses (length, then list).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/api/communicator.h"
#include "tensorfusion/message_table.h"
#include "tensorfusion/request.h"
#include "tensorfusion/response_cache.h"

namespace hoop::fusion {

struct Readiness {
  bool need_coordinator = false;
  int shutdown_by = -1;             // the lowest rank that asked to shut down, or -1
  bool some_joined = false;         // some rank has joined and not every rank has yet
  std::vector<size_t> ready_slots;  // cache slots every rank has ready, ascending
};

class Negotiator {
 public:
  // `waiters`: the runtime's callers blocked on a Handle; its calls spin only while there are
  // any (CallOptions::waiters): the readiness exchange goes on while the callers compute.
  // `timeout_name`: what set `timeout`, as the errors say.
  Negotiator(Communicator& comm, std::chrono::milliseconds timeout, std::string timeout_name, double stall_warning_s,
             const std::atomic<int>* waiters);

  // The fast path. `bits` holds one byte per cache slot (1: ready here).
  StatusOr<Readiness> ExchangeReadiness(bool need_coordinator, bool shutdown, bool joined,
                                        const std::vector<uint8_t>& bits);
  // The slow path: this rank's requests in, the coordinator's responses (the same on every rank)
  // out. On rank 0 it also logs the stall inspector's warnings.
  StatusOr<std::vector<Response>> Coordinate(const std::vector<Request>& mine);
  // Rank 0: names that wait on some rank (the coordinator keeps the slow path on meanwhile).
  bool Undecided() const { return !table_.empty(); }

 private:
  Status Gather(const std::vector<char>& mine, std::vector<std::vector<char>>* all);
  Status BroadcastBytes(std::vector<char>* bytes);

  Communicator& comm_;
  std::chrono::milliseconds timeout_;
  std::string timeout_name_;
  double stall_warning_s_;
  MessageTable table_;  // used on rank 0 only
  std::vector<uint8_t> vec_;
  std::vector<char> send_, recv_;
  // The runtime's thread waits for every collective it starts, so it runs each on its own thread.
  CallOptions blocking_{Algo::kAuto, true};
};

}  // namespace hoop::fusion
