// The trainer's threads (--threads): a fixed pool that splits a loop over a batch into one
// contiguous range per thread, the caller taking the first. Layers parallelise over images this
// way and call single-threaded BLAS inside, so one setting governs all of the compute and two
// ranks on two cores never oversubscribe them. No global pool: the model owns one.
#pragma once
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hoop::train {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return threads_; }
  // Runs fn(begin, end, worker) over [0, n) split into at most threads() ranges (worker in
  // [0, threads())), and returns when all have finished.
  void For(int n, const std::function<void(int, int, int)>& fn);

 private:
  void Work(int worker);
  const int threads_;
  std::mutex mu_;
  std::condition_variable start_, done_;
  const std::function<void(int, int, int)>* fn_ = nullptr;
  int n_ = 0, parts_ = 0;
  unsigned generation_ = 0;
  int running_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace hoop::train
