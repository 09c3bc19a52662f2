// Per-peer back-end selection. Every rank walks the registered back ends in priority order
// (shm, ucx, ofi, tcp) and creates each one that reaches a peer not yet covered, publishes the
// names and addresses of those it created through the Store, and then, for every peer, takes
// the first back end both ranks created whose CanConnect holds: both ends of a pair compute
// the same answer from the same records. HOOP_TRANSPORT (`forced`) makes it one back end for
// every peer, and an unusable choice is an error that says why.
//
// It returns only once every connection works both ways: every rank then exchanges an empty
// message with every peer, so no rank leaves start-up (and perhaps finalizes at once, taking its
// shared-memory segment or UCX worker with it) while a peer is still attaching to it.
#pragma once

#include <memory>
#include <string>

#include "common/deadline.h"
#include "common/status.h"
#include "transport/store/store.h"
#include "transport/transport.h"

namespace hoop {

// Connects this rank to every other (opts.peers lists every rank's host). Store keys go under
// `prefix`. Returns one back end, or a MultiTransport when peers are served by several.
StatusOr<std::unique_ptr<Transport>> ConnectPeers(Store& store, const std::string& prefix, const TransportOptions& opts,
                                                  const std::string& forced, Deadline deadline);

}  // namespace hoop
