// hoop-fusion-rank: what the tensor fusion tests run as their ranks (under a real hooprun).
//
//   orders STEPS     a mix of named tensors (allreduce of every dtype and op, with and without
//                    scale factors, broadcast from every root, allgather; counts 0, 1, 7, 1000,
//                    100003) submitted each step in a rank-specific order from three threads with
//                    random pauses, completed through Wait, Test and callbacks, each checked
//                    against the reference; STEPS > 1 runs the steady state (response cache)
//   mismatch FIELD   tensor 'bad' with another dtype | count | op | root | collective on rank 1,
//                    beside good tensors; 'bad' must fail on every rank, the others run, and
//                    the runtime goes on
//   kill VICTIM      every rank submits large tensors step after step; VICTIM SIGKILLs itself
//   shutdown         rank 0 stops the runtime with work in flight that the others keep submitting
//   stall S          the last rank submits 'late' S seconds after the others (HOOP_STALL_WARNING_S)
//   timeout          the last rank never submits 'never'; the others must fail it at HOOP_TIMEOUT
//   join STEPS       uneven data (Horovod's join): rank r runs STEPS + r steps of allreduces of
//                    every dtype and op, then joins; each result is checked against the ranks
//                    still running (sum and avg with zeros for the joined); a broadcast submitted
//                    while a rank has joined must fail naming it; the join must return the rank
//                    that joined last on every rank; then a second round in the reverse order,
//                    and a plain allreduce of every rank after it
// Each mode prints its findings and exits non-zero on a wrong result. Extra arguments (the
// tests' marker) are ignored.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "collectives/api/bootstrap.h"
#include "collectives/testing/reference.h"
#include "tensorfusion/runtime.h"
#include "tensorfusion/scale.h"
#include "tests/support/rank_support.h"
#include "tests/support/usage_answer.h"

namespace hoop::fusion {
namespace {

using Bytes = std::vector<char>;

struct Tensor {
  std::string name;
  CollKind kind = CollKind::kAllreduce;
  DType dtype = DType::kF32;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  size_t count = 0, out_count = 0;
  double pre = 1, post = 1;
  Bytes in, out, want;
  Handle handle;
};

// Every rank's input of tensor t at step s, the same on every rank.
Bytes InputOf(const Tensor& t, int rank, int step, uint64_t id) {
  Bytes b(t.count * DTypeSize(t.dtype) + 1);
  FillInput(t.dtype, t.kind == CollKind::kAllreduce ? t.op : ReduceOp::kSum, b.data(), t.count,
            id * 7919 + static_cast<uint64_t>(step) * 131 + static_cast<uint64_t>(rank));
  return b;
}

Tensor Make(std::string name, CollKind kind, DType dt, ReduceOp op, int root, size_t count) {
  Tensor t;
  t.name = std::move(name);
  t.kind = kind;
  t.dtype = dt;
  t.op = op;
  t.root = root;
  t.count = count;
  return t;
}

std::vector<Tensor> MakeTensors(int n) {
  std::vector<Tensor> ts;
  const size_t counts[] = {0, 1, 7, 1000, 100003};
  int k = 0;
  // i16, u16, u32 and u64 share every fusion path with i8, u8, i32 and i64 but the width: one of
  // them per job, by the rank count (the kernels' own tests take each whole).
  const DType late[] = {DType::kI16, DType::kU16, DType::kU32, DType::kU64};
  for (DType dt : kAllDTypes) {
    if (std::find(std::begin(late), std::end(late), dt) != std::end(late) && dt != late[n % 4]) continue;
    bool fp = IsFloat(dt);
    for (ReduceOp op : kAllReduceOps) {
      if (!OpApplies(dt, op)) continue;
      Tensor t = Make("ar/" + std::string(DTypeName(dt)) + "/" + ReduceOpName(op), CollKind::kAllreduce, dt, op, 0,
                      counts[k++ % 5]);
      ts.push_back(t);
      if (fp && (op == ReduceOp::kSum || op == ReduceOp::kAvg)) {
        t.name += "/scaled";
        t.pre = 0.5;
        t.post = 4;
        t.count = counts[k++ % 5];
        ts.push_back(t);
      }
    }
    for (int root = 0; root < n; ++root)
      ts.push_back(Make("bc/" + std::string(DTypeName(dt)) + "/root" + std::to_string(root), CollKind::kBroadcast, dt,
                        ReduceOp::kSum, root, counts[k++ % 5]));
    ts.push_back(
        Make("ag/" + std::string(DTypeName(dt)), CollKind::kAllgather, dt, ReduceOp::kSum, 0, counts[k++ % 5]));
  }
  return ts;
}

void Prepare(Tensor& t, uint64_t id, int rank, int n, int step) {
  const size_t es = DTypeSize(t.dtype);
  std::vector<Bytes> all;
  for (int r = 0; r < n; ++r) all.push_back(InputOf(t, r, step, id));
  t.in = all[static_cast<size_t>(rank)];
  t.out_count = t.kind == CollKind::kAllgather ? t.count * static_cast<size_t>(n) : t.count;
  t.out.assign(t.out_count * es + 1, 0x5a);
  t.want.assign(t.out_count * es + 1, 0);
  if (t.kind == CollKind::kAllreduce) {
    for (auto& b : all) ScaledCopy(t.dtype, b.data(), b.data(), t.count, t.pre);
    std::vector<const void*> ptrs;
    for (auto& b : all) ptrs.push_back(b.data());
    ReferenceReduce(t.dtype, t.op, ptrs, t.want.data(), t.count);
    ScaledCopy(t.dtype, t.want.data(), t.want.data(), t.count, t.post);
  } else if (t.kind == CollKind::kBroadcast) {
    std::memcpy(t.want.data(), all[static_cast<size_t>(t.root)].data(), t.count * es);
  } else {
    for (int r = 0; r < n; ++r)
      std::memcpy(t.want.data() + static_cast<size_t>(r) * t.count * es, all[static_cast<size_t>(r)].data(),
                  t.count * es);
  }
}

Handle SubmitTensor(Runtime& rt, Tensor& t, Callback cb = {}) {
  Buffer in{t.in.data(), t.count, t.dtype}, out{t.out.data(), t.out_count, t.dtype};
  TensorOptions o;
  o.callback = std::move(cb);
  switch (t.kind) {
    case CollKind::kAllreduce:
      o.prescale = t.pre;
      o.postscale = t.post;
      return rt.Allreduce(t.name, in, out, t.op, std::move(o));
    case CollKind::kBroadcast: return rt.Broadcast(t.name, in, out, t.root, std::move(o));
    default: return rt.Allgather(t.name, in, out, std::move(o));
  }
}

int RunOrders(Communicator& c, Runtime& rt, int steps) {
  const int n = c.size(), me = c.rank();
  std::vector<Tensor> ts = MakeTensors(n);
  std::mt19937 rng(static_cast<unsigned>(1234 + me));
  int failures = 0;
  for (int step = 0; step < steps; ++step) {
    for (size_t i = 0; i < ts.size(); ++i) Prepare(ts[i], i, me, n, step);
    std::vector<size_t> order(ts.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    std::atomic<int> callbacks{0}, callback_errors{0};
    std::vector<std::thread> threads;
    const int kThreads = 3;
    for (int th = 0; th < kThreads; ++th) {
      threads.emplace_back([&, th] {
        std::mt19937 local(static_cast<unsigned>(me * 100 + th + step * 7));
        for (size_t j = static_cast<size_t>(th); j < order.size(); j += kThreads) {
          Tensor& t = ts[order[j]];
          if (local() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(local() % 3000));
          if (order[j] % 3 == 0) {
            t.handle = SubmitTensor(rt, t, [&](const Status& s) {
              ++callbacks;
              if (!s.ok()) ++callback_errors;
            });
          } else {
            t.handle = SubmitTensor(rt, t);
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    // Complete some by polling Test, the rest by Wait; then check every result.
    for (size_t i = 0; i < ts.size(); i += 2)
      while (!ts[i].handle.Test()) std::this_thread::sleep_for(std::chrono::microseconds(200));
    for (Tensor& t : ts) {
      Status s = t.handle.Wait();
      size_t bad = s.ok() ? CountMismatches(t.dtype, t.out.data(), t.want.data(), t.out_count) : 0;
      if (!s.ok() || bad) {
        ++failures;
        std::printf("FAIL step %d %s: %s, %zu of %zu wrong\n", step, t.name.c_str(), s.ToString().c_str(), bad,
                    t.out_count);
      }
    }
    Status sync = rt.Synchronize();
    if (!sync.ok()) {
      ++failures;
      std::printf("FAIL step %d synchronize: %s\n", step, sync.ToString().c_str());
    }
    size_t with_cb = (ts.size() + 2) / 3;
    if (callbacks.load() != static_cast<int>(with_cb) || callback_errors.load()) {
      ++failures;
      std::printf("FAIL step %d: %d callbacks (%d errors), want %zu\n", step, callbacks.load(), callback_errors.load(),
                  with_cb);
    }
  }
  RuntimeStats st = rt.stats();
  std::printf("rank %d: orders %s: %zu tensors x %d steps, %d failed; %llu cycles, %llu coordinated, %llu groups\n", me,
              failures ? "FAILED" : "ok", ts.size(), steps, failures, (unsigned long long)st.cycles,
              (unsigned long long)st.coordinated_cycles, (unsigned long long)st.groups);
  return failures ? 1 : 0;
}

int RunMismatch(Communicator& c, Runtime& rt, const std::string& field) {
  const int me = c.rank(), n = c.size();
  std::vector<float> good_in[4], good_out[4];
  std::vector<Handle> good;
  for (int i = 0; i < 4; ++i) {
    good_in[i].assign(100, static_cast<float>(me + i));
    good_out[i].assign(100, 0);
    good.push_back(rt.Allreduce("good/" + std::to_string(i), {good_in[i].data(), 100, DType::kF32},
                                {good_out[i].data(), 100, DType::kF32}, ReduceOp::kSum));
  }
  std::vector<double> bad_in(200, 1.0), bad_out(200 * static_cast<size_t>(n), 0);
  const bool odd = me == 1;
  DType dt = field == "dtype" && odd ? DType::kF64 : DType::kF32;
  size_t count = field == "count" && odd ? 99 : 100;
  Buffer in{bad_in.data(), count, dt}, out{bad_out.data(), count, dt};
  Handle bad;
  if (field == "op")
    bad = rt.Allreduce("bad", in, out, odd ? ReduceOp::kMax : ReduceOp::kSum);
  else if (field == "root")
    bad = rt.Broadcast("bad", in, out, odd ? 1 : 0);
  else if (field == "collective" && odd)
    bad = rt.Allgather("bad", in, {bad_out.data(), count * static_cast<size_t>(n), dt});
  else
    bad = rt.Allreduce("bad", in, out, ReduceOp::kSum);
  Status s = bad.Wait();
  std::printf("rank %d: bad: %s\n", me, s.ToString().c_str());
  int wrong = s.code() == Code::kFailedPrecondition ? 0 : 1;
  for (int i = 0; i < 4; ++i) {
    Status g = good[static_cast<size_t>(i)].Wait();
    float want = static_cast<float>(n * (n - 1) / 2 + n * i);
    if (!g.ok() || good_out[i][0] != want) {
      ++wrong;
      std::printf("FAIL rank %d good/%d: %s, %g (want %g)\n", me, i, g.ToString().c_str(), good_out[i][0], want);
    }
  }
  // The runtime goes on: the same name, now agreed, runs.
  std::vector<float> again(10, 1.0f);
  Status after =
      rt.Allreduce("bad", {again.data(), 10, DType::kF32}, {again.data(), 10, DType::kF32}, ReduceOp::kSum).Wait();
  if (!after.ok() || again[0] != static_cast<float>(n)) {
    ++wrong;
    std::printf("FAIL rank %d: after the mismatch: %s\n", me, after.ToString().c_str());
  }
  std::printf("rank %d: mismatch %s %s\n", me, field.c_str(), wrong ? "FAILED" : "ok");
  return wrong ? 1 : 0;
}

int RunKill(Communicator& c, Runtime& rt, int victim) {
  const size_t count = 1 << 18;  // 20 tensors of 1 MiB a step
  std::vector<std::vector<float>> bufs(20, std::vector<float>(count, 1.0f));
  if (c.rank() == victim) {
    test::KillSelfAfter(std::chrono::milliseconds(400));
  }
  auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < 100000; ++step) {
    std::vector<Handle> hs;
    for (size_t i = 0; i < bufs.size(); ++i)
      hs.push_back(rt.Allreduce("t" + std::to_string(i), {bufs[i].data(), count, DType::kF32},
                                {bufs[i].data(), count, DType::kF32}, ReduceOp::kAvg));
    for (auto& h : hs) {
      Status s = h.Wait();
      if (!s.ok()) {
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        std::printf("rank %d: error after %.0f ms: %s\n", c.rank(), ms, s.ToString().c_str());
        Status later =
            rt.Allreduce("later", {bufs[0].data(), 1, DType::kF32}, {bufs[0].data(), 1, DType::kF32}, ReduceOp::kSum)
                .Wait();
        std::printf("rank %d: a later submission: %s\n", c.rank(), later.ToString().c_str());
        return 1;
      }
    }
  }
  std::printf("rank %d: no error seen\n", c.rank());
  return 0;
}

int RunShutdown(Communicator& c, Runtime& rt) {
  const int me = c.rank();
  std::vector<std::vector<float>> bufs(16, std::vector<float>(1 << 16, 1.0f));
  std::vector<Handle> hs;
  for (size_t i = 0; i < bufs.size(); ++i)
    hs.push_back(rt.Allreduce("inflight/" + std::to_string(i), {bufs[i].data(), bufs[i].size(), DType::kF32},
                              {bufs[i].data(), bufs[i].size(), DType::kF32}, ReduceOp::kSum));
  std::vector<float> x(10, 1.0f);
  Handle never;
  if (me != 0)
    never = rt.Allreduce("others-only", {x.data(), 10, DType::kF32}, {x.data(), 10, DType::kF32}, ReduceOp::kSum);
  int wrong = 0;
  if (me != 0) {  // the same name again while it is pending: refused at the call, not at its wait
    Handle again =
        rt.Allreduce("others-only", {x.data(), 10, DType::kF32}, {x.data(), 10, DType::kF32}, ReduceOp::kSum);
    const bool at_once = again.Test();
    Status s = again.Wait();
    std::printf("rank %d: others-only again: %s%s\n", me, s.ToString().c_str(), at_once ? " (at once)" : "");
    // Refused at once either way: as a repeat while the first is pending, or, where rank 0's
    // shutdown reached this rank first, because the runtime stopped.
    const bool as_repeat =
        s.code() == Code::kInvalidArgument &&
        s.message().find("submitted again while its earlier submission is still pending") != std::string::npos;
    const bool as_stopped = s.code() == Code::kAborted && s.message().find("shut down") != std::string::npos;
    wrong += !at_once || !(as_repeat || as_stopped);
  }
  if (me == 0) {
    Status s = rt.Shutdown();
    std::printf("rank 0: shutdown: %s\n", s.ToString().c_str());
  }
  std::string outcomes;
  for (auto& h : hs) {
    Status s = h.Wait();
    outcomes += s.ok() ? 'o' : (s.code() == Code::kAborted ? 'a' : 'x');
  }
  std::printf("rank %d: in flight: %s\n", me, outcomes.c_str());
  wrong += outcomes.find('x') != std::string::npos;
  if (me != 0) {
    Status s = never.Wait();
    std::printf("rank %d: others-only: %s\n", me, s.ToString().c_str());
    wrong += s.code() != Code::kAborted || s.message().find("shut down (asked by rank 0)") == std::string::npos;
  }
  Status later = rt.Allreduce("after", {x.data(), 10, DType::kF32}, {x.data(), 10, DType::kF32}, ReduceOp::kSum).Wait();
  std::printf("rank %d: after shutdown: %s\n", me, later.ToString().c_str());
  wrong += later.code() != Code::kAborted;
  Status stopped = rt.Shutdown();
  wrong += !stopped.ok();
  // The communicator is free again for direct calls.
  Status direct = c.Allreduce({x.data(), 10, DType::kF32}, {x.data(), 10, DType::kF32}, ReduceOp::kSum).Wait();
  wrong += !direct.ok();
  std::printf("rank %d: shutdown %s\n", me, wrong ? "FAILED" : "ok");
  return wrong ? 1 : 0;
}

int RunStall(Communicator& c, Runtime& rt, int seconds) {
  const int me = c.rank(), n = c.size();
  std::vector<float> x(10, 1.0f);
  if (me == n - 1) std::this_thread::sleep_for(std::chrono::seconds(seconds));
  Status s = rt.Allreduce("late", {x.data(), 10, DType::kF32}, {x.data(), 10, DType::kF32}, ReduceOp::kSum).Wait();
  bool ok = s.ok() && x[0] == static_cast<float>(n);
  std::printf("rank %d: stall %s: %s\n", me, ok ? "ok" : "FAILED", s.ToString().c_str());
  return ok ? 0 : 1;
}

int RunTimeout(Communicator& c, Runtime& rt) {
  const int me = c.rank(), n = c.size();
  std::vector<float> x(10, 1.0f);
  auto start = std::chrono::steady_clock::now();
  bool ok = true;
  if (me != n - 1) {
    Handle first = rt.Allreduce("never", {x.data(), 10, DType::kF32}, {x.data(), 10, DType::kF32}, ReduceOp::kSum);
    // The same name again while it waits for rank n-1: refused at the call, not at its wait.
    Handle again = rt.Allreduce("never", {x.data(), 10, DType::kF32}, {x.data(), 10, DType::kF32}, ReduceOp::kSum);
    const bool at_once = again.Test();
    Status a = again.Wait();
    std::printf("rank %d: never again: %s%s\n", me, a.ToString().c_str(), at_once ? " (at once)" : "");
    ok = at_once && a.code() == Code::kInvalidArgument &&
         a.message().find("submitted again while its earlier submission is still pending") != std::string::npos;
    Status s = first.Wait();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("rank %d: after %.1f s: %s\n", me, secs, s.ToString().c_str());
    ok = ok && s.code() == Code::kDeadlineExceeded &&
         s.message().find("did not submit it within HOOP_TIMEOUT") != std::string::npos;
  }
  // Keep every runtime up past the timeout, then check it still works.
  std::this_thread::sleep_until(start + std::chrono::seconds(6));
  Status s = rt.Allreduce("after", {x.data(), 10, DType::kF32}, {x.data(), 10, DType::kF32}, ReduceOp::kSum).Wait();
  ok = ok && s.ok();
  std::printf("rank %d: timeout %s\n", me, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

// Every dtype and op as an allreduce (the scaled ones too), each its own name.
std::vector<Tensor> MakeAllreduces(int n) {
  std::vector<Tensor> ts;
  for (const Tensor& t : MakeTensors(n))
    if (t.kind == CollKind::kAllreduce) ts.push_back(t);
  return ts;
}

// t's input at `step` on rank `me`, and the result over the ranks still running (`running`):
// the joined ones stand in with zeros for sum and avg (avg divides by every rank), not at all
// for the other ops.
void PrepareJoined(Tensor& t, uint64_t id, int me, int n, int step, const std::vector<bool>& running) {
  const size_t es = DTypeSize(t.dtype);
  std::vector<Bytes> all;
  for (int r = 0; r < n; ++r) {
    Bytes b = InputOf(t, r, step, id);
    if (!running[static_cast<size_t>(r)]) std::fill(b.begin(), b.end(), 0);
    all.push_back(std::move(b));
  }
  t.in = InputOf(t, me, step, id);
  t.out_count = t.count;
  t.out.assign(t.count * es + 1, 0x5a);
  t.want.assign(t.count * es + 1, 0);
  std::vector<const void*> ptrs;
  for (int r = 0; r < n; ++r) {
    Bytes& b = all[static_cast<size_t>(r)];
    ScaledCopy(t.dtype, b.data(), b.data(), t.count, t.pre);
    if (running[static_cast<size_t>(r)] || t.op == ReduceOp::kSum || t.op == ReduceOp::kAvg) ptrs.push_back(b.data());
  }
  ReferenceReduce(t.dtype, t.op, ptrs, t.want.data(), t.count);
  ScaledCopy(t.dtype, t.want.data(), t.want.data(), t.count, t.post);
}

// One round: rank r runs steps_of[r] steps, then joins. The number of failures.
int JoinRound(Communicator& c, Runtime& rt, std::vector<Tensor>& ts, const std::vector<int>& steps_of) {
  const int n = c.size(), me = c.rank();
  const int mine = steps_of[static_cast<size_t>(me)];
  const int fewest = *std::min_element(steps_of.begin(), steps_of.end());
  int failures = 0;
  for (int step = 0; step < mine; ++step) {
    std::vector<bool> running;
    for (int r = 0; r < n; ++r) running.push_back(steps_of[static_cast<size_t>(r)] > step);
    for (size_t i = 0; i < ts.size(); ++i) PrepareJoined(ts[i], i, me, n, step, running);
    for (Tensor& t : ts) t.handle = SubmitTensor(rt, t);
    if (step == fewest) {  // some rank has joined for good: a broadcast cannot run now
      std::vector<char> x(40, 1);
      Status s = rt.Broadcast("bc-while-joined", {x.data(), 10, DType::kF32}, {x.data(), 10, DType::kF32}, me).Wait();
      if (s.ok() || s.message().find("cannot run while") == std::string::npos) {
        ++failures;
        std::printf("FAIL step %d: a broadcast while a rank has joined: %s\n", step, s.ToString().c_str());
      }
    }
    for (Tensor& t : ts) {
      Status s = t.handle.Wait();
      size_t bad = s.ok() ? CountMismatches(t.dtype, t.out.data(), t.want.data(), t.count) : 0;
      if (!s.ok() || bad) {
        ++failures;
        std::printf("FAIL step %d %s: %s, %zu of %zu wrong\n", step, t.name.c_str(), s.ToString().c_str(), bad,
                    t.count);
      }
    }
  }
  int last = -1;
  Status s = rt.Join(&last).Wait();
  const int want = static_cast<int>(std::max_element(steps_of.begin(), steps_of.end()) - steps_of.begin());
  if (!s.ok() || last != want) {
    ++failures;
    std::printf("FAIL join: %s, last %d, want %d\n", s.ToString().c_str(), last, want);
  }
  return failures;
}

int RunJoin(Communicator& c, Runtime& rt, int steps) {
  const int n = c.size(), me = c.rank();
  std::vector<Tensor> ts = MakeAllreduces(n);
  std::vector<int> up, down;  // rank r runs steps + r steps, then steps + (n - 1 - r)
  for (int r = 0; r < n; ++r) up.push_back(steps + r), down.push_back(steps + n - 1 - r);
  int failures = JoinRound(c, rt, ts, up) + JoinRound(c, rt, ts, down);
  int last = -1;
  Handle all_at_once = rt.Join(&last);  // one pending at a time
  int other = -1;
  if (rt.Join(&other).Wait().code() != Code::kInvalidArgument) {
    ++failures;
    std::printf("FAIL: a second join while one is pending was not refused\n");
  }
  // Every rank joins at once: whichever is last, every rank names the same one.
  std::vector<int32_t> lo(1, 0), hi(1, 0);
  Status s = all_at_once.Wait();
  lo[0] = hi[0] = last;
  Status s2 = rt.Allreduce("last-lo", {lo.data(), 1, DType::kI32}, {lo.data(), 1, DType::kI32}, ReduceOp::kMin).Wait();
  Status s3 = rt.Allreduce("last-hi", {hi.data(), 1, DType::kI32}, {hi.data(), 1, DType::kI32}, ReduceOp::kMax).Wait();
  if (!s.ok() || !s2.ok() || !s3.ok() || last < 0 || last >= n || lo[0] != hi[0]) {
    ++failures;
    std::printf("FAIL: a join of every rank at once: %s, last %d (%d..%d over the ranks)\n", s.ToString().c_str(), last,
                lo[0], hi[0]);
  }
  std::vector<float> x(10, static_cast<float>(me + 1));
  Status after = rt.Allreduce("after", {x.data(), 10, DType::kF32}, {x.data(), 10, DType::kF32}, ReduceOp::kSum).Wait();
  if (!after.ok() || x[9] != static_cast<float>(n * (n + 1) / 2)) {
    ++failures;
    std::printf("FAIL after the joins: %s, %g\n", after.ToString().c_str(), x[9]);
  }
  std::printf("rank %d: join %s: %zu tensors, %d failed\n", me, failures ? "FAILED" : "ok", ts.size(), failures);
  return failures ? 1 : 0;
}

}  // namespace
}  // namespace hoop::fusion

int main(int argc, char** argv) {
  using namespace hoop;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const char* usage =
      "usage: hoop-fusion-rank orders STEPS | mismatch FIELD | kill VICTIM | shutdown | stall S | timeout | join "
      "STEPS\n"
      "  one rank of a tensor fusion runtime test, run under hooprun\n";
  if (int code = test::AnswerUsage(argc, argv, "hoop-fusion-rank", usage); code >= 0) return code;
  std::string mode = argv[1];
  std::string arg = argc > 2 ? argv[2] : "";
  Config cfg;
  int exit_code = 0;
  auto job = test::JoinTestJob("hoop-fusion-rank", &cfg, &exit_code);
  if (!job) return exit_code;
  Communicator& c = *job->comm;
  auto rt = fusion::Runtime::Start(c, fusion::FusionOptions::FromConfig(cfg));
  if (!rt.ok()) {
    std::printf("rank %d: runtime: %s\n", c.rank(), rt.status().ToString().c_str());
    return 1;
  }
  fusion::Runtime& r = **rt;
  if (mode == "orders") return fusion::RunOrders(c, r, std::max(1, std::atoi(arg.c_str())));
  if (mode == "mismatch") return fusion::RunMismatch(c, r, arg);
  if (mode == "kill") return fusion::RunKill(c, r, std::atoi(arg.c_str()));
  if (mode == "shutdown") return fusion::RunShutdown(c, r);
  if (mode == "stall") return fusion::RunStall(c, r, std::atoi(arg.c_str()));
  if (mode == "timeout") return fusion::RunTimeout(c, r);
  if (mode == "join") return fusion::RunJoin(c, r, std::max(1, std::atoi(arg.c_str())));
  std::fputs(usage, stderr);
  return 2;
}
