// Joining a job from a Config: open (or, for rank 0 of an mpirun/Slurm job with a tcp:// store,
// serve) the rendezvous store, then create the communicator. Shared by the C API, hoop-perf and
// the test programs so they all start the same way. A job may be joined more than once (two
// communicators over the same ranks): the n-th join on every rank makes the same communicator,
// named "world" for the first and "world-N" after, and each is independent of the others.
#pragma once

#include <memory>

#include "collectives/api/communicator.h"
#include "common/config.h"
#include "transport/store/tcp_store.h"

namespace hoop {

// With a file:// store, JoinJob refuses a directory that holds another job's entries, and the
// last Job of the job to end cleanly, on any rank, empties the directory (every JoinJob counts
// itself in "hoop/open" and out again when its Job ends with a healthy communicator).
struct Job {
  Job() = default;
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;
  ~Job();
  std::unique_ptr<TcpStoreServer> server;
  std::unique_ptr<Store> store;
  std::unique_ptr<Communicator> comm;
};

StatusOr<std::unique_ptr<Job>> JoinJob(const Config& cfg);
// The same over a store the caller opened (cfg.store is not read): the C API's hoop_init_store.
StatusOr<std::unique_ptr<Job>> JoinJobOnStore(const Config& cfg, std::unique_ptr<Store> store);
// A newcomer joins a running job through its store (cfg.store; it never serves it), admitted by
// the job's next grow (Communicator::Join): the C API's hoop_init_join. cfg's rank, where a
// launcher gave one, is its number in the job; its size is not read.
StatusOr<std::unique_ptr<Job>> JoinAsNewcomer(const Config& cfg);

}  // namespace hoop
