#include "python/torch_ext/work.h"

#include <ATen/core/jit_type.h>
#include <Python.h>

#include <stdexcept>

namespace hoop::torch_ext {

HoopWork::HoopWork(int rank, c10d::OpType type, const char* title, std::vector<at::Tensor> outputs,
                   std::vector<at::Tensor> keep, std::function<void()> after)
    : c10d::Work(rank, type, title),
      outputs_(std::move(outputs)),
      keep_(std::move(keep)),
      after_(std::move(after)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

HoopWork::~HoopWork() {
  // Dropped before anyone waited: the tensors it holds must outlive the operation.
  if (request_) Complete();
}

bool HoopWork::isCompleted() {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ == State::kDone) return true;
  if (state_ == State::kCompleting || !request_) return false;
  int done = 0;
  return hoop_test(request_, &done) == HOOP_SUCCESS && done;
}

bool HoopWork::isSuccess() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_ == State::kDone && !error_;
}

std::exception_ptr HoopWork::exception() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

void HoopWork::Complete(bool background) {
  std::unique_lock<std::mutex> lock(mu_);
  if (state_ == State::kDone) return;
  if (state_ == State::kCompleting) {
    done_cv_.wait(lock, [&] { return state_ == State::kDone; });
    return;
  }
  state_ = State::kCompleting;
  hoop_request_t r = request_;
  request_ = nullptr;
  lock.unlock();
  std::exception_ptr error;
  if (r && (background ? hoop_wait_background(r) : hoop_wait(r)) != HOOP_SUCCESS) {
    error = std::make_exception_ptr(std::runtime_error(std::string("hoop: ") + hoop_last_error()));
  } else if (after_) {
    try {
      after_();
    } catch (...) {
      error = std::current_exception();
    }
  }
  keep_.clear();
  lock.lock();
  error_ = error;
  state_ = State::kDone;
  lock.unlock();
  done_cv_.notify_all();
  finish(error);                       // the base class's state, for its own waiters
  Completer::CallbackScope callbacks;  // they run here, and may wait for another Work
  if (error)
    future_->setError(error);
  else
    future_->markCompleted(c10::IValue(outputs_));
}

bool HoopWork::wait(std::chrono::milliseconds timeout) {
  if (timeout != kNoTimeout) {
    // hoop's wait has no time limit of its own (HOOP_TIMEOUT bounds every call): poll until then.
    auto until = std::chrono::steady_clock::now() + timeout;
    while (!isCompleted()) {
      if (std::chrono::steady_clock::now() >= until)
        throw std::runtime_error("hoop: Work.wait: not complete within " + std::to_string(timeout.count()) + " ms");
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  Complete();
  std::lock_guard<std::mutex> lock(mu_);
  if (error_) std::rethrow_exception(error_);
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> HoopWork::getFuture() {
  bool hand_over = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    hand_over = !future_taken_ && state_ == State::kPending && on_future;
    future_taken_ = true;
  }
  if (hand_over) on_future(c10::intrusive_ptr<HoopWork>::reclaim_copy(this));
  return future_;
}

namespace {

// The process's live Completers, for StopAll: interpreter exit is process-wide, so this list is
// too (only the Python glue has one).
struct LiveCompleters {
  std::mutex mu;
  std::vector<std::weak_ptr<Completer>> all;
};

LiveCompleters& Live() {
  static auto* live = new LiveCompleters;  // never destroyed: atexit may run after statics go
  return *live;
}

// The Completer queue whose thread this is (nullptr elsewhere), for CallbackScope.
thread_local void* tls_queue = nullptr;

}  // namespace

Completer::Completer() {
  std::lock_guard<std::mutex> lock(q_->mu);
  q_->threads.emplace_back([q = q_] { Loop(q); });
}

std::shared_ptr<Completer> Completer::Make() {
  std::shared_ptr<Completer> c(new Completer);
  LiveCompleters& live = Live();
  std::lock_guard<std::mutex> lock(live.mu);
  std::erase_if(live.all, [](const std::weak_ptr<Completer>& w) { return w.expired(); });
  live.all.push_back(c);
  return c;
}

Completer::~Completer() { Stop(true); }

void Completer::Stop() { Stop(false); }

void Completer::Stop(bool destroying) {
  // On one of its own threads (a Future's callback dropped the group): never wait there for its
  // threads, nor for join_mu_, which a Stop on another thread may hold while joining this one.
  const bool own = tls_queue == q_.get();
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(q_->mu);
    q_->stop = true;
    if (!own || destroying) threads.swap(q_->threads);  // else left for a later Stop to join
  }
  q_->cv.notify_all();
  if (own) {
    for (std::thread& t : threads) t.detach();  // *this goes: they end once the queue is drained
    return;
  }
  std::lock_guard<std::mutex> lock(join_mu_);
  // The threads may need the GIL to finish what is queued: not holding it while waiting.
  PyThreadState* saved = Py_IsInitialized() && PyGILState_Check() ? PyEval_SaveThread() : nullptr;
  for (std::thread& t : threads) t.join();
  if (saved) PyEval_RestoreThread(saved);
}

void Completer::StopAll() {
  std::vector<std::shared_ptr<Completer>> live;
  {
    std::lock_guard<std::mutex> lock(Live().mu);
    for (const auto& w : Live().all)
      if (auto c = w.lock()) live.push_back(std::move(c));
  }
  for (auto& c : live) c->Stop();
}

bool Completer::Add(c10::intrusive_ptr<HoopWork> w) {
  {
    std::lock_guard<std::mutex> lock(q_->mu);
    // Stopped, or every thread inside callbacks and no more may start: the caller completes it.
    if (q_->stop || q_->Full()) return false;
    q_->works.push_back(std::move(w));
    q_->GrowIfStuck();
  }
  q_->cv.notify_one();
  return true;
}

void Completer::Queue::GrowIfStuck() {
  const int n = static_cast<int>(threads.size());
  if (!stop && !works.empty() && in_callbacks >= n && n < kMaxThreads)
    threads.emplace_back([self = shared_from_this()] { Loop(self); });
}

bool Completer::Queue::Full() const {
  const int n = static_cast<int>(threads.size());
  return in_callbacks >= n && n >= kMaxThreads;
}

Completer::CallbackScope::CallbackScope() {
  auto* q = static_cast<Queue*>(tls_queue);
  if (!q) return;
  std::deque<c10::intrusive_ptr<HoopWork>> orphans;
  {
    std::lock_guard<std::mutex> lock(q->mu);
    ++q->in_callbacks;
    q->GrowIfStuck();  // Works queued before: the callbacks may wait for one of them
    // No thread left to take them, and these callbacks may wait for one: taken here, first.
    if (q->Full()) orphans.swap(q->works);
  }
  for (auto& w : orphans) w->Complete(true);
}

Completer::CallbackScope::~CallbackScope() {
  auto* q = static_cast<Queue*>(tls_queue);
  if (!q) return;
  std::lock_guard<std::mutex> lock(q->mu);
  --q->in_callbacks;
}

void Completer::Loop(const std::shared_ptr<Queue>& q) {
  tls_queue = q.get();
  while (true) {
    c10::intrusive_ptr<HoopWork> w;
    {
      std::unique_lock<std::mutex> lock(q->mu);
      q->cv.wait(lock, [&] { return q->stop || !q->works.empty(); });
      if (q->works.empty()) return;
      w = std::move(q->works.front());
      q->works.pop_front();
    }
    w->Complete(true);  // while the caller computes: nothing may spin for this thread
  }
}

}  // namespace hoop::torch_ext
