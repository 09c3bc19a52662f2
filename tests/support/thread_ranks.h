// The in-process test harness: N communicators as threads of one process, meeting through a
// MemoryStore and connected over a real back end (tcp or shm), for tests that check exact values
// of the executor and the calls quickly. The hooprun tests stay the end-to-end layer (processes,
// launcher, crashes); these are for arithmetic and matching.
//
// Bounded: every operation has the harness's timeout (HOOP_TIMEOUT's meaning), and Run() gives the
// ranks a wall-clock limit; past it every communicator is aborted, so the stuck calls fail and
// the threads return, and Run() reports the hang naming the ranks that had not finished.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/api/communicator.h"
#include "transport/store/memory_store.h"

namespace hoop::test {

class ThreadRanks {
 public:
  // Creates n communicators (each on its own thread, as ranks would) over `transport`.
  // `tweak` may change each rank's options before its communicator is made.
  static StatusOr<std::unique_ptr<ThreadRanks>> Start(int n, const std::string& transport,
                                                      std::chrono::milliseconds op_timeout = std::chrono::seconds(20),
                                                      const std::function<void(CommOptions&)>& tweak = nullptr);
  ~ThreadRanks();

  int size() const { return static_cast<int>(comms_.size()); }
  Communicator& comm(int rank) { return *comms_[static_cast<size_t>(rank)]; }
  Store& store() { return store_; }  // the job's store: newcomers join through it

  // Runs body(rank, comm) on one thread per rank at once; the first failure (in rank order), or a
  // hang past `limit`, is returned, naming the rank.
  Status Run(const std::function<Status(int rank, Communicator& comm)>& body,
             std::chrono::seconds limit = std::chrono::seconds(60));

 private:
  ThreadRanks() = default;
  MemoryStore store_;  // outlives the communicators (declared first)
  std::vector<std::unique_ptr<Communicator>> comms_;
};

}  // namespace hoop::test
