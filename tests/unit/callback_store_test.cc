// hoop_init_store: ranks as threads of this process joining through a store of the caller's
// (C callbacks over a MemoryStore here; PyTorch's c10d stores in tests/python), then a real
// allreduce over tcp; a store whose calls fail or time out is named in the error, with the
// store's own message.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "hoop/hoop.h"
#include "transport/store/memory_store.h"

namespace {

struct Ctx {
  hoop::MemoryStore store;
  bool fail_gets = false;
};

void Say(char* err, size_t cap, const std::string& s) { std::snprintf(err, cap, "%s", s.c_str()); }

int Set(void* c, const char* key, const void* value, size_t len, char* err, size_t cap) {
  hoop::Status s = static_cast<Ctx*>(c)->store.Set(key, std::string(static_cast<const char*>(value), len));
  if (!s.ok()) Say(err, cap, s.message());
  return s.ok() ? 0 : 2;
}

int Get(void* c, const char* key, long long ms, void** value, size_t* len, char* err, size_t cap) {
  auto* ctx = static_cast<Ctx*>(c);
  if (ctx->fail_gets) {
    Say(err, cap, "the test's store refuses gets");
    return 5;
  }
  auto v = ctx->store.Get(key, hoop::Deadline::After(std::chrono::milliseconds(ms)));
  if (!v.ok()) {
    Say(err, cap, v.status().message());
    return v.status().code() == hoop::Code::kDeadlineExceeded ? HOOP_STORE_TIMEOUT : 2;
  }
  *len = v->size();
  *value = std::malloc(v->size() + 1);
  std::memcpy(*value, v->data(), v->size());
  return 0;
}

int Add(void* c, const char* key, long long delta, long long* result, char* err, size_t cap) {
  auto r = static_cast<Ctx*>(c)->store.Add(key, delta);
  if (!r.ok()) {
    Say(err, cap, r.status().message());
    return 2;
  }
  *result = *r;
  return 0;
}

}  // namespace

TEST_CASE("hoop_init_store: ranks join through the caller's store and allreduce", "[capi][store]") {
  Ctx ctx;
  hoop_store_t store{Set, Get, Add, &ctx};
  const int n = 3;
  std::vector<std::string> errors(n);
  std::vector<std::vector<float>> out(n);
  std::vector<std::thread> ranks;
  for (int r = 0; r < n; ++r)
    ranks.emplace_back([&, r] {
      hoop_comm_t comm = nullptr;
      if (hoop_init_store(&comm, r, n, &store, "127.0.0.1") != HOOP_SUCCESS) {
        errors[r] = hoop_last_error();
        return;
      }
      std::vector<float> v(1001, static_cast<float>(r + 1));
      out[r].resize(v.size());
      if (hoop_allreduce(comm, v.data(), out[r].data(), v.size(), HOOP_F32, HOOP_SUM) != HOOP_SUCCESS)
        errors[r] = hoop_last_error();
      hoop_finalize(comm);
    });
  for (auto& t : ranks) t.join();
  for (int r = 0; r < n; ++r) {
    INFO("rank " << r << ": " << errors[r]);
    CHECK(errors[r].empty());
    REQUIRE(out[r].size() == 1001);
    CHECK(out[r][0] == 6.0f);
    CHECK(out[r][1000] == 6.0f);
  }
}

TEST_CASE("hoop_init_store: bad stores and arguments are refused with the cause", "[capi][store]") {
  Ctx ctx;
  hoop_store_t store{Set, Get, Add, &ctx};
  hoop_comm_t comm = nullptr;
  CHECK(hoop_init_store(&comm, 0, 2, nullptr, nullptr) == HOOP_ERR_INVALID_ARGUMENT);
  CHECK(std::string(hoop_last_error()).find("the store") != std::string::npos);
  hoop_store_t no_get{Set, nullptr, Add, &ctx};
  CHECK(hoop_init_store(&comm, 0, 2, &no_get, nullptr) == HOOP_ERR_INVALID_ARGUMENT);
  CHECK(hoop_init_store(&comm, 2, 2, &store, nullptr) == HOOP_ERR_INVALID_ARGUMENT);
  CHECK(std::string(hoop_last_error()).find("rank 2 is not in [0, 2)") != std::string::npos);
  // The store's own failure, with its message, names the call and the key.
  ctx.fail_gets = true;
  CHECK(hoop_init_store(&comm, 0, 2, &store, "127.0.0.1") != HOOP_SUCCESS);
  const std::string why = hoop_last_error();
  INFO(why);
  CHECK(why.find("hoop_init_store") != std::string::npos);
  CHECK(why.find("the test's store refuses gets") != std::string::npos);
  CHECK(why.find("get '") != std::string::npos);
  CHECK(comm == nullptr);
}

TEST_CASE("hoop_init_store_timeout: the given timeout bounds the rendezvous and the calls", "[capi][store]") {
  Ctx ctx;
  hoop_store_t store{Set, Get, Add, &ctx};
  hoop_comm_t comm = nullptr;
  for (double bad : {0.0, -1.0, 0.0005, 604801.0, std::nan("")}) {
    CHECK(hoop_init_store_timeout(&comm, 0, 2, &store, nullptr, bad) == HOOP_ERR_INVALID_ARGUMENT);
    const std::string why = hoop_last_error();
    INFO(why);
    CHECK(why.find("rank 0: hoop_init_store_timeout: timeout") != std::string::npos);
    CHECK(why.find(" s: expected seconds in [0.001, 604800] (a week)") != std::string::npos);
  }
  // Rank 1 never comes: the rendezvous gives up at the given timeout (HOOP_TIMEOUT is 300 s).
  auto started = std::chrono::steady_clock::now();
  CHECK(hoop_init_store_timeout(&comm, 0, 2, &store, "127.0.0.1", 0.5) != HOOP_SUCCESS);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));
  CHECK(comm == nullptr);
  // Both come; rank 1 is then late to the allreduce: rank 0's call fails at about 1 s.
  Ctx joined;
  hoop_store_t both{Set, Get, Add, &joined};
  std::vector<hoop_comm_t> comms(2, nullptr);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] { hoop_init_store_timeout(&comms[r], r, 2, &both, "127.0.0.1", 1.0); });
  for (auto& t : ranks) t.join();
  REQUIRE(comms[0] != nullptr);
  REQUIRE(comms[1] != nullptr);
  float x = 1, y = 0;
  started = std::chrono::steady_clock::now();
  CHECK(hoop_allreduce(comms[0], &x, &y, 1, HOOP_F32, HOOP_SUM) == HOOP_ERR_TIMEOUT);
  const auto took = std::chrono::steady_clock::now() - started;
  INFO(hoop_last_error());
  CHECK(took < std::chrono::seconds(5));
  CHECK(std::string(hoop_last_error()).find("(timeout 1 s, less 0.5 s") != std::string::npos);  // not HOOP_TIMEOUT
  hoop_finalize(comms[0]);
  hoop_finalize(comms[1]);
}
