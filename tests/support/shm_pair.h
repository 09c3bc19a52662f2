// Two shared-memory transports in one process, ranks 0 and 1 of a job named `name`, connected to
// each other: a real pair of segments for tests of the shm back end and of what runs on it; and
// the completions a transport's poll gives within a time.
#pragma once

#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "transport/shm/shm_transport.h"

namespace hoop::test {

inline std::array<std::unique_ptr<Transport>, 2> ConnectedShmPair(const std::string& name) {
  std::array<std::unique_ptr<Transport>, 2> t;
  for (int r = 0; r < 2; ++r) {
    TransportOptions o;
    o.rank = r;
    o.size = 2;
    o.token = name;
    o.comm = name + "-test";
    auto made = ShmTransport::Create(o);
    REQUIRE(made.ok());
    t[static_cast<size_t>(r)] = std::move(*made);
  }
  REQUIRE(t[0]->Connect(1, t[1]->Address(), Deadline::After(std::chrono::seconds(5))).ok());
  REQUIRE(t[1]->Connect(0, t[0]->Address(), Deadline::After(std::chrono::seconds(5))).ok());
  return t;
}

// Polls `t` until `want` completions came or `wait` passed; what came.
inline std::vector<Completion> Collect(Transport& t, size_t want, std::chrono::milliseconds wait) {
  std::vector<Completion> all;
  Deadline d = Deadline::After(wait);
  while (all.size() < want && t.Poll(&all, d).ok()) {
  }
  return all;
}

}  // namespace hoop::test
