// A fake CUDA stream for the tests of ordering on streams (StreamOrder's launch seam, and
// CommOptions::stream_launch): a thread that runs the work queued on it in order, as CUDA runs a
// stream's, host functions included. And a flag such work raises, with a bounded wait for it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "common/status.h"

namespace hoop::test {

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
    using namespace std::chrono_literals;
    const auto end = std::chrono::steady_clock::now() + d;
    while (!up.load() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
    return up.load();
  }
};

}  // namespace hoop::test
