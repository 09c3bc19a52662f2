// A fake CUDA stream for the tests of ordering on streams (StreamOrder's seam, and
// CommOptions::stream_ops): a thread that runs the work queued on it in order, as CUDA runs a
// stream's, host functions and waits on a word included (the words come from a static arena, as
// a device's never move). Host functions run as CUDA may run them: every stream's on one shared
// thread, the stream waiting until its function returns, so a host function that blocked would
// hold up every stream's. And a flag such work raises, with a bounded wait for it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "collectives/device/stream_order.h"
#include "common/status.h"

namespace hoop::test {

// The one thread that runs every fake stream's host functions, one at a time.
class HostFnThread {
 public:
  static HostFnThread& Get() {
    static HostFnThread* t = new HostFnThread;  // never destroyed: its thread waits on it to the end
    return *t;
  }
  void RunAndWait(void (*fn)(void*), void* arg) {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t mine = ++queued_;
    work_.push_back({fn, arg});
    cv_.notify_all();
    cv_.wait(lock, [&] { return done_ >= mine; });
  }

 private:
  HostFnThread() : thread_([this] { Loop(); }) { thread_.detach(); }  // lives as long as the process
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return !work_.empty(); });
      auto [fn, arg] = work_.front();
      work_.pop_front();
      lock.unlock();
      fn(arg);
      lock.lock();
      ++done_;
      cv_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<void (*)(void*), void*>> work_;
  uint64_t queued_ = 0, done_ = 0;
  std::thread thread_;
};

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
    static_cast<FakeStream*>(stream)->Queue([fn, arg] { HostFnThread::Get().RunAndWait(fn, arg); });
    return Status::Ok();
  }
  // The stream's later work waits until *word >= value (as cuStreamWaitValue32 with GEQ).
  static Status WaitWord(void* stream, const uint32_t* word, uint32_t value) {
    static_cast<FakeStream*>(stream)->Queue([word, value] {
      using namespace std::chrono_literals;
      auto* w = const_cast<uint32_t*>(word);
      while (static_cast<int32_t>(std::atomic_ref<uint32_t>(*w).load(std::memory_order_acquire) - value) < 0)
        std::this_thread::sleep_for(50us);
    });
    return Status::Ok();
  }
  static StatusOr<uint32_t*> AllocWords(size_t n) {
    static uint32_t arena[1 << 16];
    static std::atomic<size_t> used{0};
    const size_t at = used.fetch_add(n);
    if (at + n > std::size(arena)) return Internal("the fake stream's word arena is used up");
    return arena + at;
  }
  static void FreeWords(uint32_t*) {}

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

inline const StreamOps* FakeStreamOps() {
  static const StreamOps ops{&FakeStream::Launch, &FakeStream::WaitWord, &FakeStream::AllocWords,
                             &FakeStream::FreeWords};
  return &ops;
}

}  // namespace hoop::test
