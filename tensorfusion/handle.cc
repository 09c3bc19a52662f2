#include "tensorfusion/handle.h"

namespace hoop::fusion {

namespace {

// Sets h's final status and takes its callback; false if it was completed already.
bool Begin(HandleState& h, Status s, Callback* cb) {
  std::lock_guard<std::mutex> lock(h.mu);
  if (h.completing) return false;
  h.completing = true;
  h.status = std::move(s);
  *cb = std::move(h.callback);
  return true;
}

void MarkDone(HandleState& h) {
  std::lock_guard<std::mutex> lock(h.mu);
  h.done = true;
  h.finished = true;
}

}  // namespace

void Complete(HandleState& h, Status s) {
  Callback cb;
  if (!Begin(h, std::move(s), &cb)) return;
  if (cb) cb(h.status);  // status no longer changes once completing
  MarkDone(h);
  h.cv.notify_all();
}

void CompleteAll(std::vector<std::pair<std::shared_ptr<HandleState>, Status>>& done) {
  std::vector<Callback> cbs(done.size());
  std::vector<bool> fresh(done.size());
  for (size_t i = 0; i < done.size(); ++i) fresh[i] = Begin(*done[i].first, std::move(done[i].second), &cbs[i]);
  for (size_t i = 0; i < done.size(); ++i)
    if (cbs[i]) cbs[i](done[i].first->status);
  for (size_t i = 0; i < done.size(); ++i)
    if (fresh[i]) MarkDone(*done[i].first);
  for (size_t i = 0; i < done.size(); ++i)
    if (fresh[i]) done[i].first->cv.notify_all();
}

Status Handle::Wait(Deadline deadline) const {
  if (!s_) return InvalidArgument("Wait on an empty tensor fusion handle");
  // Counted while it waits: the runtime's calls may spin meanwhile (CallOptions::waiters).
  struct Count {
    std::atomic<int>* n;
    ~Count() {
      if (n) n->fetch_sub(1, std::memory_order_relaxed);
    }
  } count{s_->finished.load(std::memory_order_acquire) ? nullptr : s_->waiters.get()};
  if (count.n) count.n->fetch_add(1, std::memory_order_relaxed);
  std::unique_lock<std::mutex> lock(s_->mu);
  if (!s_->cv.wait_until(lock, deadline.at(), [&] { return s_->done; }))
    return DeadlineExceeded("tensor '" + s_->name + "' still pending at the Wait deadline");
  return s_->status;
}

bool Handle::Test() const {
  if (!s_) return true;
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->done;
}

void Handle::OnComplete(Callback cb) const {
  if (!s_ || !cb) return;
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    if (!s_->completing) {
      s_->callback = std::move(cb);
      return;
    }
  }
  cb(s_->status);
}

const std::string& Handle::name() const {
  static const std::string empty;
  return s_ ? s_->name : empty;
}

}  // namespace hoop::fusion
