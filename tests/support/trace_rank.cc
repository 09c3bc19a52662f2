// hoop-test-rank trace DIR [skip]: the flight recorder in a real job. Every rank allreduces
// 1000 f32, broadcasts 10 i32 from rank 0 and sends 5 f64 to the next rank while receiving from
// the one before (nonblocking), then allreduces 1000 f32 again and dumps its recorder into DIR
// (hoop_comm_dump_trace's path); the broadcast and the receive are named by NameNextCall, the
// second allreduce by its CallOptions::trace_name. With "skip", rank 1 calls a barrier where the others call that
// second allreduce: every rank times out (HOOP_TIMEOUT, set by the test), writes its recorder by
// itself (HOOP_TRACE_DIR, set by the test) and exits 1.
//
// hoop-test-rank hang KIND RANK: the hangs users meet, for hoop-doctor (tests/launch/doctor_test.cc).
// Every rank runs 3 rounds of an allreduce of 1000 f32 and a broadcast of 10 i32 from rank 0
// (collectives #0 to #5), then a barrier; in round 2 (the allreduce is #2) rank RANK does KIND
// instead: skip (leaves that allreduce out), order (the broadcast first), size (999 elements),
// sleep (10 minutes before it: stuck in its own code), stop (SIGSTOP to itself), exit (exits 3).
// KIND loop: no culprit of its own; every rank allreduces 1M f32 in a loop (RunLoop).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/rank_support.h"

namespace hoop {

int RunTrace(Communicator& c, const std::string& dir, bool skip) {
  std::vector<float> a(1000, 1.0f);
  std::vector<int32_t> b(10, c.rank());
  std::vector<double> out(5, c.rank()), in(5);
  const Buffer fa{a.data(), a.size(), DType::kF32};
  Status s = c.Allreduce(fa, fa, ReduceOp::kSum).Wait();
  c.NameNextCall("test:broadcast");  // the recorder's names: the next call's, and one call's own
  if (s.ok()) s = c.Broadcast({b.data(), b.size(), DType::kI32}, {b.data(), b.size(), DType::kI32}, 0).Wait();
  if (s.ok() && c.size() > 1) {
    c.NameNextCall("test:recv");
    Work r = c.Recv({in.data(), in.size(), DType::kF64}, (c.rank() + c.size() - 1) % c.size(), 7);
    Work w = c.Send({out.data(), out.size(), DType::kF64}, (c.rank() + 1) % c.size(), 7);
    s = w.Wait();
    if (Status got = r.Wait(); s.ok()) s = got;
  }
  CallOptions named;
  named.trace_name = "test:second allreduce";
  if (s.ok()) s = skip && c.rank() == 1 ? c.Barrier().Wait() : c.Allreduce(fa, fa, ReduceOp::kSum, named).Wait();
  if (!s.ok()) {
    std::printf("rank %d: %s\n", c.rank(), s.ToString().c_str());
    return 1;
  }
  auto path = c.DumpTrace(dir);
  std::printf("rank %d: %s\n", c.rank(), path.ok() ? ("trace " + *path).c_str() : path.status().ToString().c_str());
  return path.ok() ? 0 : 1;
}

namespace {
Status Round(Communicator& c, std::vector<float>& a, std::vector<int32_t>& b, bool broadcast_first, size_t count) {
  const Buffer fa{a.data(), count, DType::kF32}, fb{b.data(), b.size(), DType::kI32};
  if (broadcast_first) HOOP_RETURN_IF_ERROR(c.Broadcast(fb, fb, 0).Wait());
  HOOP_RETURN_IF_ERROR(c.Allreduce(fa, fa, ReduceOp::kSum).Wait());
  return broadcast_first ? Status::Ok() : c.Broadcast(fb, fb, 0).Wait();
}
}  // namespace

// "loop": every rank allreduces 1M f32 over and over, for 10 minutes at most: the load a link
// that turns lossy under it (the test shapes it) leaves stuck mid-collective.
int RunLoop(Communicator& c) {
  std::vector<float> a(1 << 20, 1.0f);
  const Buffer fa{a.data(), a.size(), DType::kF32};
  const auto end = std::chrono::steady_clock::now() + std::chrono::minutes(10);
  Status s;
  for (int i = 0; s.ok() && std::chrono::steady_clock::now() < end; ++i) {
    s = c.Allreduce(fa, fa, ReduceOp::kAvg).Wait();
    if (i == 0) std::printf("rank %d: looping\n", c.rank());
    std::fflush(stdout);
  }
  std::printf("rank %d: %s\n", c.rank(), s.ToString().c_str());
  return s.ok() ? 0 : 1;
}

int RunHang(Communicator& c, const std::string& kind, int culprit) {
  if (kind == "loop") return RunLoop(c);
  std::vector<float> a(1000, 1.0f);
  std::vector<int32_t> b(10, c.rank());
  Status s;
  for (int round = 0; round < 3 && s.ok(); ++round) {
    const bool here = round == 1 && c.rank() == culprit;
    if (here && kind == "skip") {
      s = c.Broadcast({b.data(), b.size(), DType::kI32}, {b.data(), b.size(), DType::kI32}, 0).Wait();
      continue;
    }
    if (here && kind == "sleep") std::this_thread::sleep_for(std::chrono::minutes(10));
    if (here && kind == "stop") ::raise(SIGSTOP);
    if (here && kind == "exit") ::_exit(3);
    s = Round(c, a, b, here && kind == "order", here && kind == "size" ? 999 : 1000);
  }
  if (s.ok()) s = c.Barrier().Wait();
  std::printf("rank %d: %s\n", c.rank(), s.ok() ? "done" : s.ToString().c_str());
  return s.ok() ? 0 : 1;
}

}  // namespace hoop
