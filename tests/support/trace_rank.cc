// hoop-test-rank trace DIR [skip]: the flight recorder in a real job. Every rank allreduces
// 1000 f32, broadcasts 10 i32 from rank 0 and sends 5 f64 to the next rank while receiving from
// the one before (nonblocking), then allreduces 1000 f32 again and dumps its recorder into DIR
// (hoop_comm_dump_trace's path). With "skip", rank 1 calls a barrier where the others call that
// second allreduce: every rank times out (HOOP_TIMEOUT, set by the test), writes its recorder by
// itself (HOOP_TRACE_DIR, set by the test) and exits 1.
#include <cstdio>
#include <string>
#include <vector>

#include "tests/support/rank_support.h"

namespace hoop {

int RunTrace(Communicator& c, const std::string& dir, bool skip) {
  std::vector<float> a(1000, 1.0f);
  std::vector<int32_t> b(10, c.rank());
  std::vector<double> out(5, c.rank()), in(5);
  const Buffer fa{a.data(), a.size(), DType::kF32};
  Status s = c.Allreduce(fa, fa, ReduceOp::kSum).Wait();
  if (s.ok()) s = c.Broadcast({b.data(), b.size(), DType::kI32}, {b.data(), b.size(), DType::kI32}, 0).Wait();
  if (s.ok() && c.size() > 1) {
    Work r = c.Recv({in.data(), in.size(), DType::kF64}, (c.rank() + c.size() - 1) % c.size(), 7);
    Work w = c.Send({out.data(), out.size(), DType::kF64}, (c.rank() + 1) % c.size(), 7);
    s = w.Wait();
    if (Status got = r.Wait(); s.ok()) s = got;
  }
  if (s.ok()) s = skip && c.rank() == 1 ? c.Barrier().Wait() : c.Allreduce(fa, fa, ReduceOp::kSum).Wait();
  if (!s.ok()) {
    std::printf("rank %d: %s\n", c.rank(), s.ToString().c_str());
    return 1;
  }
  auto path = c.DumpTrace(dir);
  std::printf("rank %d: %s\n", c.rank(), path.ok() ? ("trace " + *path).c_str() : path.status().ToString().c_str());
  return path.ok() ? 0 : 1;
}

}  // namespace hoop
