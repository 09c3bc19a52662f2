// Store: the rendezvous key-value store through which ranks find each other. Three calls, none
// optional: Set publishes bytes under a key, Get waits (until a deadline) for a key to appear,
// Add atomically adds to a counter and returns the new value.
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
};

StatusOr<std::unique_ptr<Store>> OpenStore(const std::string& url, const std::string& token, Deadline deadline);

}  // namespace hoop
