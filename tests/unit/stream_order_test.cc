// StreamOrder's logic (collectives/stream_order.h) on a fake CUDA stream: a thread that runs the
// host functions queued on it in order, as CUDA runs a stream's work. What a real stream adds
// (the hold as CUDA sees it, the staging copies around it) is tested on a GPU in tests/gpu.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "collectives/stream_order.h"

namespace hoop {
namespace {

using namespace std::chrono_literals;

class FakeStream {
 public:
  FakeStream() : thread_([this] { Loop(); }) {}
  ~FakeStream() {
    Queue(nullptr);
    thread_.join();
  }
  // Work queued on the stream: runs after everything queued before it.
  void Queue(std::function<void()> f) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      work_.push_back(std::move(f));
    }
    cv_.notify_all();
  }
  static Status Launch(void* stream, void (*fn)(void*), void* arg) {
    static_cast<FakeStream*>(stream)->Queue([fn, arg] { fn(arg); });
    return Status::Ok();
  }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> f;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !work_.empty(); });
        f = std::move(work_.front());
        work_.pop_front();
      }
      if (!f) return;
      f();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> work_;
  std::thread thread_;
};

// A flag that work queued on a stream raises, and a gate that holds a stream until opened.
struct Flag {
  std::atomic<bool> up{false};
  bool Within(std::chrono::milliseconds d) const {
    const auto end = std::chrono::steady_clock::now() + d;
    while (!up.load() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
    return up.load();
  }
};

Status FailingLaunch(void*, void (*)(void*), void*) { return Internal("cudaLaunchHostFunc: no stream"); }

}  // namespace

TEST_CASE("stream order: the worker waits for the stream's earlier work, the stream's later work for the release", "[stream]") {
  FakeStream stream;
  Flag gate, after;
  stream.Queue([&] { gate.Within(10s); });  // the caller's earlier work, still running
  auto order = std::make_unique<StreamOrder>(&FakeStream::Launch);
  auto t = order->Enter(&stream);
  REQUIRE(t.ok());
  CHECK(t->seq == 1);
  stream.Queue([&] { after.up = true; });  // the caller's work after the call
  Status early = order->WaitInput(*t, Deadline::After(50ms));
  CHECK(early.code() == Code::kDeadlineExceeded);
  CHECK_THAT(early.message(), Catch::Contains("did not finish in time"));
  gate.up = true;
  REQUIRE(order->WaitInput(*t, Deadline::After(10s)).ok());
  CHECK_FALSE(after.Within(100ms));  // held: the operation is still running
  order->Release(*t);
  CHECK(after.Within(10s));
}

TEST_CASE("stream order: a release lets that call's stream go, and those before it", "[stream]") {
  FakeStream s1, s2;
  Flag after1, after2;
  StreamOrder order(&FakeStream::Launch);
  auto t1 = order.Enter(&s1);
  auto t2 = order.Enter(&s2);
  REQUIRE((t1.ok() && t2.ok()));
  CHECK(t2->seq == t1->seq + 1);
  s1.Queue([&] { after1.up = true; });
  s2.Queue([&] { after2.up = true; });
  REQUIRE(order.WaitInput(*t1, Deadline::After(10s)).ok());
  REQUIRE(order.WaitInput(*t2, Deadline::After(10s)).ok());
  order.Release(*t1);
  CHECK(after1.Within(10s));
  CHECK_FALSE(after2.Within(100ms));
  order.Release(*t2);
  CHECK(after2.Within(10s));
}

TEST_CASE("stream order: freeing it lets every held stream go; a failed launch holds nothing", "[stream]") {
  FakeStream stream;
  Flag after;
  {
    StreamOrder order(&FakeStream::Launch);
    auto t = order.Enter(&stream);
    REQUIRE(t.ok());
    stream.Queue([&] { after.up = true; });
    CHECK_FALSE(after.Within(50ms));
  }
  CHECK(after.Within(10s));

  StreamOrder broken(&FailingLaunch);
  auto t = broken.Enter(&stream);
  REQUIRE_FALSE(t.ok());
  CHECK_THAT(t.status().message(), Catch::Contains("no stream"));
}

}  // namespace hoop
