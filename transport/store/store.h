// Store: the rendezvous key-value store through which ranks find each other. Three calls, none
// optional: Set publishes bytes under a key, Get waits (until a deadline) for a key to appear,
// Add atomically adds to a counter and returns the new value. A fourth, SetIfAbsent, keeps the
// first value written under a key and returns whichever value the key holds: the one agreement
// the shrink of a communicator needs (collectives/core/shrink.cc). Every store of hoop's does it
// in one step; the default, for a caller's store (three calls only), is a ticket from Add then a
// Set by its winner, so a winner that dies between the two leaves the others waiting for the key
// until their deadline (never two values).
//
// Implementations: MemoryStore (threads of one process), FileStore (a directory on a shared
// file system; needs no server), TcpStoreClient (talks to TcpStoreServer, which hooprun runs).
// OpenStore picks one from a URL: tcp://HOST:PORT or file:///DIR.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/deadline.h"
#include "common/status.h"

namespace hoop {

class Store {
 public:
  virtual ~Store() = default;
  virtual Status Set(const std::string& key, const std::string& value) = 0;
  virtual StatusOr<std::string> Get(const std::string& key, Deadline deadline) = 0;
  virtual StatusOr<int64_t> Add(const std::string& key, int64_t delta) = 0;
  // The value under `key` after this call: `value` if the key was absent, else what it held.
  virtual StatusOr<std::string> SetIfAbsent(const std::string& key, const std::string& value, Deadline deadline);
};

StatusOr<std::unique_ptr<Store>> OpenStore(const std::string& url, const std::string& token, Deadline deadline);

}  // namespace hoop
