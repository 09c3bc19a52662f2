#include <catch2/catch.hpp>

#include <cstdlib>
#include <thread>

#include "transport/file_store.h"
#include "transport/memory_store.h"
#include "transport/socket.h"
#include "transport/tcp_store.h"

using namespace hoop;

namespace {
void Exercise(Store& s) {
  CHECK(s.Set("a/b", "1").ok());
  auto v = s.Get("a/b", Deadline::After(std::chrono::seconds(1)));
  REQUIRE(v.ok());
  CHECK(*v == "1");
  CHECK(*s.Add("ctr", 3) == 3);
  CHECK(*s.Add("ctr", 4) == 7);
  // A counter never wraps: the Add that would overflow is refused and leaves it as it was.
  CHECK(s.Add("big", INT64_MAX).ok());
  CHECK(s.Add("big", 1).status().code() == Code::kInvalidArgument);
  CHECK(*s.Add("big", 0) == INT64_MAX);
  auto missing = s.Get("nope", Deadline::After(std::chrono::milliseconds(100)));
  CHECK(missing.status().code() == Code::kDeadlineExceeded);
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    (void)s.Set("late", "x");
  });
  auto w = s.Get("late", Deadline::After(std::chrono::seconds(5)));
  later.join();
  REQUIRE(w.ok());
  CHECK(*w == "x");
}
}  // namespace

TEST_CASE("memory store", "[store]") {
  MemoryStore s;
  Exercise(s);
}

TEST_CASE("file store", "[store]") {
  char tmpl[] = "/tmp/hoop-store-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  auto s = FileStore::Open(tmpl);
  REQUIRE(s.ok());
  Exercise(**s);
  std::string cmd = std::string("rm -rf ") + tmpl;
  CHECK(std::system(cmd.c_str()) == 0);
}

TEST_CASE("a store that never answers is reported as silent, not as a wrong token", "[store]") {
  // A listening socket nobody serves: the hello goes out and no answer comes back.
  int port = 0;
  auto listener = Listen("127.0.0.1", 0, &port);
  REQUIRE(listener.ok());
  auto store = OpenStore("tcp://127.0.0.1:" + std::to_string(port), "token", Deadline::After(std::chrono::milliseconds(300)));
  REQUIRE_FALSE(store.ok());
  CHECK(store.status().code() == Code::kDeadlineExceeded);
  CHECK(store.status().message().find("no answer to the hello") != std::string::npos);
  CHECK(store.status().message().find("token") == std::string::npos);
}
