// The parameter-server job's connections (issue 24, item 2). The job's communicator sees the
// loss of any rank on every rank and fails from then on (communicator.h): right for synchronous
// training, wrong for a parameter server that must outlive a worker. So each server and each
// worker get a communicator of two ranks of their own, made over the job's store with
// connections of their own (not Split's, which share the job's): a worker's death fails only
// its links, and the servers go on with the rest. The servers have one more among themselves,
// for rank 0 to collect their shards for the checkpoint.
//
// Ranks 0..K-1 are the servers, K..N-1 the workers. Every link is made in one order on every rank
// (server, then worker, ascending), so the pairs meet without waiting on each other in a cycle.
#pragma once
#include <memory>
#include <vector>

#include "collectives/api/communicator.h"

namespace hoop::train {

struct PsLinks {
  int servers = 0, workers = 0;
  // On a server: one per worker (index: the worker's rank - servers); on a worker: one per
  // server. In each the server is rank 0 and the worker rank 1.
  std::vector<std::unique_ptr<Communicator>> peers;
  std::unique_ptr<Communicator> among_servers;  // on servers: ranks 0..K-1 of the job, in order
};

// Every rank of `job` calls it, with the same `servers`.
StatusOr<PsLinks> ConnectPs(const Communicator& job, int servers);

}  // namespace hoop::train
