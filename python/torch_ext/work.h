// HoopWork: torch.distributed's Work for a hoop nonblocking call (a hoop_request_t), and the
// Completer whose threads finish the ones whose Future was asked for (DDP's communication hooks
// chain on futures).
//
// A Work completes once, on whichever thread gets there first: wait() on the caller's thread,
// or the completer's thread for a Work whose Future was taken. Completing waits for the request
// (hoop_wait, which reports the error on that thread), copies the results back where a call
// went through a temporary (allgather into a list of tensors, say), then finishes the Work and
// its Future, with the error as a RuntimeError carrying hoop's message.
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "hoop/hoop.h"

namespace hoop::torch_ext {

class HoopWork : public c10d::Work {
 public:
  // outputs: what result() and the Future give; keep: tensors the call reads or writes (held until
  // it completes); after: run once the call succeeded (copy-back), before the Work finishes.
  HoopWork(int rank, c10d::OpType type, const char* title, std::vector<at::Tensor> outputs,
           std::vector<at::Tensor> keep, std::function<void()> after = {});
  ~HoopWork() override;

  // The C call fills this in; a Work whose call was refused is never completed (it is not returned).
  hoop_request_t* slot() { return &request_; }
  hoop_recv_info_t* recv_info() { return &info_; }

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  std::vector<at::Tensor> result() override { return outputs_; }
  int sourceRank() const override { return info_.source; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  void synchronize() override {}

  // Waits for the request (or for the thread already doing so) and finishes the Work.
  // `background`: the Completer's wait, while the caller computes (hoop_wait_background).
  void Complete(bool background = false);
  // Set by the process group: the Completer that finishes this Work when its Future is taken.
  std::function<void(c10::intrusive_ptr<HoopWork>)> on_future;

 private:
  enum class State { kPending, kCompleting, kDone };
  hoop_request_t request_ = nullptr;
  hoop_recv_info_t info_{-1, -1, 0};
  std::vector<at::Tensor> outputs_, keep_;
  std::function<void()> after_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  bool future_taken_ = false;
  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  State state_ = State::kPending;
  std::exception_ptr error_;
};

// The threads of one process group that complete the Works whose Future was taken, each taking
// the next in the order they were queued.
//
// A Future's callbacks run on the thread that completes it, and a callback may itself issue a
// call and wait for that call's Future (PowerSGD's hook does: `all_reduce(...).get_future().wait()`
// inside a `then`). So one thread is not enough: when every thread of the group is inside
// callbacks and a Work is waiting, another thread is started (each stays, for the next time; at
// most kMaxThreads). Most groups never need more than one. Past that (callbacks nested more than
// kMaxThreads deep, each waiting for the next), a Work whose Future is taken completes on the
// thread that took it, and one queued meanwhile on the thread entering the last callbacks, before
// them: slower, never a hang.
//
// Completing a Work drops its tensors, and a tensor that Python also holds takes the GIL to drop
// its Python object. So the threads must be gone before the interpreter finalizes (a thread that
// asks for the GIL then is ended inside a noexcept destructor: "terminate called without an
// active exception"), and whoever stops them must not hold the GIL meanwhile (a deadlock). StopAll,
// which hoop.torch registers with atexit, stops every Completer of the process while Python is
// still whole; a Work whose Future is taken after that completes on the caller's thread.
class Completer {
 public:
  static constexpr int kMaxThreads = 16;
  static std::shared_ptr<Completer> Make();  // started, and known to StopAll
  ~Completer();                              // Stop()
  // Completes what is queued, then ends the threads; releases the GIL while it waits if this
  // thread holds it. Idempotent. On one of the Completer's own threads it only asks them to end
  // (a later Stop, or StopAll, joins them).
  void Stop();
  // Every live Completer of this process, stopped (for atexit).
  static void StopAll();
  // Queues w; false once stopped (the caller completes it).
  bool Add(c10::intrusive_ptr<HoopWork> w);

  // Around a Future's callbacks (HoopWork::Complete): on a Completer's thread, marks it as
  // running them, so that Works queued meanwhile get another thread. Elsewhere, nothing.
  class CallbackScope {
   public:
    CallbackScope();
    ~CallbackScope();
    CallbackScope(const CallbackScope&) = delete;
    CallbackScope& operator=(const CallbackScope&) = delete;
  };

 private:
  // Shared with the threads, which may outlive *this: when the last reference to the Completer
  // goes on one of its threads (a Future's callback dropped the group), that thread is detached.
  struct Queue : std::enable_shared_from_this<Queue> {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<c10::intrusive_ptr<HoopWork>> works;
    bool stop = false;
    int in_callbacks = 0;              // threads inside a Future's callbacks
    std::vector<std::thread> threads;  // guarded by mu; none started once stop is set
    // Another thread, where every one is inside callbacks and a Work waits (mu held).
    void GrowIfStuck();
    // Every thread inside callbacks, and kMaxThreads started (mu held).
    bool Full() const;
  };
  Completer();
  void Stop(bool destroying);
  static void Loop(const std::shared_ptr<Queue>& q);
  std::shared_ptr<Queue> q_ = std::make_shared<Queue>();
  std::mutex join_mu_;  // one Stop joins; the others wait for it
};

}  // namespace hoop::torch_ext
