// The back-end configurations every multi-process test runs over: each back end forced with
// HOOP_TRANSPORT, and UCX and libfabric each over their TCP and their shared-memory paths.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace hoop::test {

struct Backend {
  std::string label;
  std::map<std::string, std::string> env;
};

inline const std::vector<Backend>& Backends() {
  static const std::vector<Backend> all = {
      {"tcp", {{"HOOP_TRANSPORT", "tcp"}}},
      {"shm", {{"HOOP_TRANSPORT", "shm"}}},
      {"ucx/tcp", {{"HOOP_TRANSPORT", "ucx"}, {"UCX_TLS", "tcp"}}},
      {"ucx/sm", {{"HOOP_TRANSPORT", "ucx"}, {"UCX_TLS", "sm"}}},
      {"ofi/tcp", {{"HOOP_TRANSPORT", "ofi"}, {"FI_PROVIDER", "tcp;ofi_rxm"}}},
      {"ofi/shm", {{"HOOP_TRANSPORT", "ofi"}, {"FI_PROVIDER", "shm"}}},
  };
  return all;
}

}  // namespace hoop::test
