#include "tensorfusion/handle.h"

namespace hoop::fusion {

void Complete(HandleState& h, Status s) {
  Callback cb;
  {
    std::lock_guard<std::mutex> lock(h.mu);
    if (h.done) return;
    h.done = true;
    h.status = std::move(s);
    cb = std::move(h.callback);
  }
  h.cv.notify_all();
  if (cb) cb(h.status);  // status no longer changes once done
}

Status Handle::Wait(Deadline deadline) const {
  if (!s_) return InvalidArgument("Wait on an empty tensor fusion handle");
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
    if (!s_->done) {
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
