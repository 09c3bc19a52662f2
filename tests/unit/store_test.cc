#include <catch2/catch.hpp>

#include <cstdlib>
#include <thread>

#include "transport/file_store.h"
#include "transport/memory_store.h"

using namespace hoop;

namespace {
void Exercise(Store& s) {
  CHECK(s.Set("a/b", "1").ok());
  auto v = s.Get("a/b", Deadline::After(std::chrono::seconds(1)));
  REQUIRE(v.ok());
  CHECK(*v == "1");
  CHECK(*s.Add("ctr", 3) == 3);
  CHECK(*s.Add("ctr", 4) == 7);
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
