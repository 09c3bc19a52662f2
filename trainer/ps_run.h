// hoop-train --strategy ps (issue 24, item 2): training through parameter servers.
//
//   servers (ranks 0..K-1): each holds a shard of the parameters and their momentum and applies
//            the workers' gradients as they come (ps_server.h). Server 0 also sums the workers'
//            epoch reports into the log and the metrics, and writes the checkpoint: the whole
//            model, its shard and the others' (sent over the servers' own link), with the
//            workers' batch-norm buffers averaged; a sync run continues it (--resume --force).
//   workers (ranks K..N-1): the training set dealt among them as sync deals it among ranks; each
//            step pulls every server's shard, computes the gradient of its own batch, pushes it,
//            and goes on without waiting for the others, but for the staleness bound. At the end
//            of each epoch a worker pulls the parameters, evaluates its part of the test set and
//            reports to server 0.
// The links between them are their own (ps_links.h): a worker that dies is left out and the
// rest go on; a server that dies fails its workers' links, and they end with an error naming it.
#pragma once
#include <atomic>

#include "collectives/api/communicator.h"
#include "trainer/mnist.h"
#include "trainer/options.h"
#include "trainer/trainer.h"

namespace hoop::train {

StatusOr<RunResult> TrainPs(const Options& opts, Communicator& comm, const Dataset& train, const Dataset& test,
                            const std::atomic<int>* stop);

}  // namespace hoop::train
