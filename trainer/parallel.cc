#include "trainer/parallel.h"

#include <algorithm>

namespace hoop::train {

namespace {
void Range(int n, int parts, int i, int* b, int* e) {
  *b = static_cast<int>(static_cast<long>(n) * i / parts);
  *e = static_cast<int>(static_cast<long>(n) * (i + 1) / parts);
}
}  // namespace

ThreadPool::ThreadPool(int threads) : threads_(std::max(1, threads)) {
  for (int w = 1; w < threads_; ++w) workers_.emplace_back([this, w] { Work(w); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::For(int n, const std::function<void(int, int, int)>& fn) {
  if (n <= 0) return;
  int parts = std::min(n, threads_);
  if (parts == 1) {
    fn(0, n, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    fn_ = &fn;
    n_ = n;
    parts_ = parts;
    running_ = parts - 1;
    ++generation_;
  }
  start_.notify_all();
  int b, e;
  Range(n, parts, 0, &b, &e);
  fn(b, e, 0);
  std::unique_lock<std::mutex> l(mu_);
  done_.wait(l, [&] { return running_ == 0; });
  fn_ = nullptr;
}

void ThreadPool::Work(int worker) {
  unsigned seen = 0;
  for (;;) {
    const std::function<void(int, int, int)>* fn;
    int n, parts;
    {
      std::unique_lock<std::mutex> l(mu_);
      start_.wait(l, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      fn = fn_;
      n = n_;
      parts = parts_;
    }
    if (worker < parts) {
      int b, e;
      Range(n, parts, worker, &b, &e);
      (*fn)(b, e, worker);
      std::lock_guard<std::mutex> l(mu_);
      if (--running_ == 0) done_.notify_one();
    }
  }
}

}  // namespace hoop::train
