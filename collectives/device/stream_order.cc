// StreamOrder (stream_order.h).
#include "collectives/device/stream_order.h"

#include <algorithm>

#include "common/device.h"

namespace hoop {

namespace {
const StreamOps kCudaOps{&CudaLaunchHostFunc, &CudaStreamWaitWord, &CudaAllocWords, &CudaFreeWords};
}  // namespace

StreamOrder::StreamOrder(const StreamOps* ops) : ops_(ops != nullptr ? *ops : kCudaOps) {}

StreamOrder::~StreamOrder() {
  // Nothing is left to run (the communicator drained its queue): let every held stream go. The
  // words stay while a ticket holds them.
  std::lock_guard<std::mutex> lock(mu_);
  for (const StreamTicket& t : held_) Release(t);
}

void StreamOrder::SignalInput(void* arg) {
  // The host function owns one reference to the signal, given at Enter.
  std::unique_ptr<std::shared_ptr<StreamSignal>> owned(static_cast<std::shared_ptr<StreamSignal>*>(arg));
  StreamSignal& s = **owned;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.input_ready = true;
  }
  s.cv.notify_all();
}

StatusOr<StreamTicket> StreamOrder::TakeWord() {
  // Calls released since the last Enter give their words back.
  auto released = [](const StreamTicket& t) { return t.signal->released.load(std::memory_order_acquire) != 0; };
  for (const StreamTicket& t : held_)
    if (released(t)) free_.push_back(t.at);
  held_.erase(std::remove_if(held_.begin(), held_.end(), released), held_.end());
  if (free_.empty()) {
    HOOP_ASSIGN_OR_RETURN(uint32_t * words, ops_.alloc_words(kSlabWords));
    auto slab = std::make_shared<StreamWords>();
    slab->words = words;
    slab->n = kSlabWords;
    slab->free_words = ops_.free_words;
    slabs_.push_back(std::move(slab));
    values_.resize(slabs_.size() * kSlabWords, 0);
    for (size_t w = kSlabWords; w-- > 0;) free_.push_back((slabs_.size() - 1) * kSlabWords + w);
  }
  const size_t at = free_.back();
  free_.pop_back();
  StreamTicket t;
  t.slab = slabs_[at / kSlabWords];
  t.word = at % kSlabWords;
  t.at = at;
  t.value = ++values_[at];
  if (t.value == 0) t.value = ++values_[at];  // 0 is every word's first state: never wait for it
  return t;
}

StatusOr<StreamTicket> StreamOrder::Enter(void* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  HOOP_ASSIGN_OR_RETURN(StreamTicket t, TakeWord());
  t.seq = next_ + 1;
  t.signal = std::make_shared<StreamSignal>();
  auto owned = std::make_unique<std::shared_ptr<StreamSignal>>(t.signal);
  Status s = ops_.launch(stream, &StreamOrder::SignalInput, owned.get());
  if (s.ok()) owned.release();  // the host function owns it now
  if (s.ok()) s = ops_.wait_word(stream, &t.slab->words[t.word], t.value);
  if (!s.ok()) {
    // Nothing holds the stream (a queued host function only tells a signal nobody waits on): the
    // word goes back at the next Enter.
    t.signal->released.store(1, std::memory_order_release);
    held_.push_back(t);
    return s;
  }
  held_.push_back(t);
  next_ = t.seq;
  return t;
}

Status StreamOrder::WaitInput(const StreamTicket& t, Deadline deadline) {
  std::unique_lock<std::mutex> lock(t.signal->mu);
  if (deadline.IsNever()) {
    t.signal->cv.wait(lock, [&] { return t.signal->input_ready; });
    return Status::Ok();
  }
  if (!t.signal->cv.wait_until(lock, deadline.at(), [&] { return t.signal->input_ready; }))
    return DeadlineExceeded("the CUDA stream's work queued before the call did not finish in time");
  return Status::Ok();
}

bool StreamOrder::InputReady(const StreamTicket& t) {
  std::lock_guard<std::mutex> lock(t.signal->mu);
  return t.signal->input_ready;
}

void StreamOrder::Release(const StreamTicket& t) {
  // The device reads the word over the bus: a plain store, made visible by the fence (and
  // published for the pruning at Enter by the flag after it).
  std::atomic_ref<uint32_t>(t.slab->words[t.word]).store(t.value, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  t.signal->released.store(1, std::memory_order_release);
}

}  // namespace hoop
