// hoop-test-rank: what the multi-process tests run as their ranks (under a real hooprun).
//
//   matrix           every collective (allreduce, broadcast, allgather, reduce_scatter, reduce,
//                    gather, scatter, alltoall, allgatherv, reduce_scatterv, alltoallv,
//                    barrier) x dtype x op x count {0, 1, 7, 1000,
//                    100003} x algorithm, roots moving, in place and not (a dtype x op that
//                    does not apply is checked to be refused),
//                    checked against the reference on rank-specific random data
//   kill VICTIM      all ranks run large allreduces; VICTIM SIGKILLs itself in the middle of
//                    one; the others report the error they get and exit 1
//   lock_kill VICTIM own|peers
//                    over libfabric's shm provider: VICTIM dies holding its own region's lock or
//                    every peer's (built with libfabric only); the others report their error
//   mismatch         rank 0 allreduces 1000 elements, the others 999; each reports its error,
//                    then shows that the communicator refuses the next call
//   idle S           sleeps S seconds without joining anything (a long-lived rank)
//   straggler S      rank 1 sleeps S seconds before its allreduce (longer than HOOP_TIMEOUT);
//                    the others must time out naming it
//   compress, compress_mismatch   wire compression (compress_rank.cc)
//   device_ipc       device buffers between processes by CUDA IPC (device_ipc_rank.cc; a GPU)
//   deterministic [SEED]  the deterministic mode bit for bit against the canonical fold, fused
//                    too, and a digest of every result (det_rank.cc)
//   strangers        hostile clients against a rank and the store, during start-up and after
//                    (hostile_rank.cc)
//   fd_flood         hooprun's store flooded while hooprun is out of descriptors (ditto)
//   trace DIR [skip] the flight recorder: a few calls, then a dump into DIR; skip: rank 1 calls
//                    a barrier where the others allreduce, every rank times out (trace_rank.cc)
// Extra arguments (a marker the tests use to find stray processes) are ignored.
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "collectives/api/bootstrap.h"
#include "collectives/testing/reference.h"
#include "common/device.h"
#if HOOP_TEST_HAVE_OFI
#include "transport/ofi/shm_lock_rescue.h"
#endif
#include "tests/support/rank_support.h"
#include "tests/support/usage_answer.h"

namespace hoop {
namespace {

constexpr size_t kCounts[] = {0, 1, 7, 1000, 100003};

struct Matrix {
  Communicator& c;
  int failures = 0;
  int checks = 0;
  uint64_t case_id = 0;

  void Expect(const std::string& what, Status s, const std::vector<char>& got, const std::vector<char>& want, DType dt,
              size_t count) {
    ++checks;
    if (!s.ok()) {
      ++failures;
      std::printf("FAIL %s: %s\n", what.c_str(), s.ToString().c_str());
      return;
    }
    size_t bad = CountMismatches(dt, got.data(), want.data(), count);
    if (bad) {
      ++failures;
      std::printf("FAIL %s: %zu of %zu elements wrong\n", what.c_str(), bad, count);
    }
  }

  void Fail(const std::string& what, const std::string& why) {
    ++checks;
    ++failures;
    std::printf("FAIL %s: %s\n", what.c_str(), why.c_str());
  }

  // The v-collectives' per-rank counts around `count`: uneven, every third one empty.
  std::vector<size_t> VCounts(size_t count) const {
    std::vector<size_t> v;
    for (int r = 0; r < c.size(); ++r) v.push_back(r % 3 == 1 ? 0 : count + static_cast<size_t>(r));
    return v;
  }

  // Every rank's input for this case, generated identically on every rank.
  std::vector<std::vector<char>> Inputs(DType dt, ReduceOp op, size_t count) {
    std::vector<std::vector<char>> in(static_cast<size_t>(c.size()), std::vector<char>(count * DTypeSize(dt) + 1));
    for (int r = 0; r < c.size(); ++r)
      FillInput(dt, op, in[static_cast<size_t>(r)].data(), count, case_id * 131 + static_cast<uint64_t>(r));
    return in;
  }
  // This rank's whole input for this case (as Inputs(...)[me]), and every rank's elements
  // [first, first + len) of theirs: what a reduce-scatter's reference needs, without making
  // every rank's whole input (n times the work).
  std::vector<char> Own(DType dt, ReduceOp op, size_t count) {
    std::vector<char> v(count * DTypeSize(dt) + 1);
    FillInput(dt, op, v.data(), count, case_id * 131 + static_cast<uint64_t>(c.rank()));
    return v;
  }
  std::vector<std::vector<char>> Slices(DType dt, ReduceOp op, size_t total, size_t first, size_t len) {
    std::vector<std::vector<char>> in(static_cast<size_t>(c.size()), std::vector<char>(len * DTypeSize(dt) + 1));
    for (int r = 0; r < c.size(); ++r)
      FillInputSlice(dt, op, in[static_cast<size_t>(r)].data(), total, first, len,
                     case_id * 131 + static_cast<uint64_t>(r));
    return in;
  }
  static std::vector<const void*> Ptrs(const std::vector<std::vector<char>>& v) {
    std::vector<const void*> p;
    for (auto& x : v) p.push_back(x.data());
    return p;
  }

  // Every dtype but those HOOPTEST_SKIP_DTYPES names (comma-separated): the matrix test runs
  // each job with one of the two fp8 formats and one of the late integer types, in turns.
  static std::vector<DType> Dtypes() {
    const char* env = std::getenv("HOOPTEST_SKIP_DTYPES");
    const std::string skip = std::string(",") + (env ? env : "") + ",";
    std::vector<DType> out;
    for (DType dt : kAllDTypes)
      if (skip.find(std::string(",") + DTypeName(dt) + ",") == std::string::npos) out.push_back(dt);
    return out;
  }

  void Run() {
    const size_t n = static_cast<size_t>(c.size());
    const size_t me = static_cast<size_t>(c.rank());
    for (DType dt : Dtypes()) {
      const size_t es = DTypeSize(dt);
      for (size_t count : kCounts) {
        auto tag = [&](const char* coll, const char* extra) {
          return std::string(coll) + " " + extra + " " + DTypeName(dt) + " count " + std::to_string(count);
        };
        for (ReduceOp op : kAllReduceOps) {
          if (!OpApplies(dt, op)) {  // refused on every rank before anything is sent
            std::vector<char> x(count * es + 1);
            Status s = c.Allreduce({x.data(), count, dt}, {x.data(), count, dt}, op).Wait();
            if (s.code() != Code::kInvalidArgument || s.message().find(OpMismatch(dt, op)) == std::string::npos)
              Fail(tag("allreduce refused", ReduceOpName(op)), "got: " + s.ToString());
            else
              ++checks;
            continue;
          }
          for (Algo algo : {Algo::kRing, Algo::kTree, Algo::kDoubling, Algo::kHierarchical}) {
            ++case_id;
            auto in = Inputs(dt, op, count);
            std::vector<char> want(count * es + 1), out(count * es + 1, 0x33);
            ReferenceReduce(dt, op, Ptrs(in), want.data(), count);
            Status s = c.Allreduce({in[me].data(), count, dt}, {out.data(), count, dt}, op, {algo}).Wait();
            Expect(tag("allreduce", (std::string(AlgoName(algo)) + " " + ReduceOpName(op)).c_str()), s, out, want, dt,
                   count);
            // In place.
            std::vector<char> buf = in[me];
            s = c.Allreduce({buf.data(), count, dt}, {buf.data(), count, dt}, op, {algo}).Wait();
            Expect(tag("allreduce in-place", (std::string(AlgoName(algo)) + " " + ReduceOpName(op)).c_str()), s, buf,
                   want, dt, count);
          }
          ++case_id;
          std::vector<char> mine = Own(dt, op, count * n);
          std::vector<char> want(count * es + 1), out(count * es + 1, 0x33);
          ReferenceReduce(dt, op, Ptrs(Slices(dt, op, count * n, me * count, count)), want.data(), count);
          Status s;
          for (Algo algo : {Algo::kRing, Algo::kHierarchical}) {
            std::fill(out.begin(), out.end(), 0x33);
            s = c.ReduceScatter({mine.data(), count * n, dt}, {out.data(), count, dt}, op, {algo}).Wait();
            Expect(tag("reduce_scatter", (std::string(AlgoName(algo)) + " " + ReduceOpName(op)).c_str()), s, out, want,
                   dt, count);
          }
          {  // reduce_scatterv: uneven blocks, some empty
            ++case_id;
            const std::vector<size_t> counts = VCounts(count);
            size_t total = 0;
            for (size_t k : counts) total += k;
            std::vector<char> vin = Own(dt, op, total);
            std::vector<char> vwant(counts[me] * es + 1), vout(counts[me] * es + 1, 0x34);
            size_t at = 0;
            for (size_t r = 0; r < me; ++r) at += counts[r];
            ReferenceReduce(dt, op, Ptrs(Slices(dt, op, total, at, counts[me])), vwant.data(), counts[me]);
            s = c.ReduceScatterv({vin.data(), total, dt}, {vout.data(), counts[me], dt}, counts, op).Wait();
            Expect(tag("reduce_scatterv", ReduceOpName(op)), s, vout, vwant, dt, counts[me]);
          }
          for (Algo algo : {Algo::kBinomial, Algo::kChain}) {
            ++case_id;
            const int root = static_cast<int>(case_id % n);
            auto rin = Inputs(dt, op, count);
            std::vector<char> rwant(count * es + 1), rout(count * es + 1, 0x33);
            ReferenceReduce(dt, op, Ptrs(rin), rwant.data(), count);
            const bool is_root = static_cast<int>(me) == root;
            // Non-roots pass no output at all.
            s = c.Reduce({rin[me].data(), count, dt}, is_root ? Buffer{rout.data(), count, dt} : Buffer{}, op, root,
                         {algo})
                    .Wait();
            if (is_root) rwant.back() = rout.back();  // the guard byte past the end is not compared
            Expect(
                tag("reduce",
                    (std::string(AlgoName(algo)) + " " + ReduceOpName(op) + " root " + std::to_string(root)).c_str()),
                s, is_root ? rout : rwant, rwant, dt, count);
          }
        }
        for (Algo algo : {Algo::kChain, Algo::kBinomial, Algo::kHierarchical}) {
          ++case_id;
          int root = static_cast<int>(case_id % n);
          auto in = Inputs(dt, ReduceOp::kSum, count);
          std::vector<char> out(count * es + 1, 0x33);
          Status s = c.Broadcast({in[me].data(), count, dt}, {out.data(), count, dt}, root, {algo}).Wait();
          Expect(tag("broadcast", (std::string(AlgoName(algo)) + " root " + std::to_string(root)).c_str()), s, out,
                 in[static_cast<size_t>(root)], dt, count);
        }
        auto in = Inputs(dt, ReduceOp::kMax, count);
        std::vector<char> want(count * n * es + 1);
        for (size_t r = 0; r < n; ++r) std::memcpy(want.data() + r * count * es, in[r].data(), count * es);
        Status s;
        for (Algo algo : {Algo::kRing, Algo::kHierarchical}) {
          ++case_id;
          std::vector<char> out(count * n * es + 1, 0x33);
          s = c.Allgather({in[me].data(), count, dt}, {out.data(), count * n, dt}, {algo}).Wait();
          Expect(tag("allgather", AlgoName(algo)), s, out, want, dt, count * n);
          // In place: the rank's block already sits in the output.
          std::vector<char> buf(count * n * es + 1, 0x44);
          std::memcpy(buf.data() + me * count * es, in[me].data(), count * es);
          s = c.Allgather({buf.data() + me * count * es, count, dt}, {buf.data(), count * n, dt}, {algo}).Wait();
          Expect(tag("allgather in-place", AlgoName(algo)), s, buf, want, dt, count * n);
        }

        // Gather and scatter by each algorithm, the root moving with the case; the root's own
        // block in place too.
        for (Algo algo : {Algo::kFlat, Algo::kBinomial}) {
          ++case_id;
          const int root = static_cast<int>(case_id % n);
          const bool is_root = static_cast<int>(me) == root;
          const std::string how = std::string(AlgoName(algo)) + " root " + std::to_string(root);
          std::vector<char> g(count * n * es + 1, 0x55);
          s = c.Gather({in[me].data(), count, dt}, is_root ? Buffer{g.data(), count * n, dt} : Buffer{}, root, {algo})
                  .Wait();
          Expect(tag("gather", how.c_str()), s, is_root ? g : want, want, dt, count * n);
          std::vector<char> g2(count * n * es + 1, 0x56);
          if (is_root) std::memcpy(g2.data() + me * count * es, in[me].data(), count * es);
          s = c.Gather({is_root ? g2.data() + me * count * es : in[me].data(), count, dt},
                       is_root ? Buffer{g2.data(), count * n, dt} : Buffer{}, root, {algo})
                  .Wait();
          Expect(tag("gather in-place", how.c_str()), s, is_root ? g2 : want, want, dt, count * n);
          // Scatter: the root's input is `want` (every rank's block), rank r gets block r.
          std::vector<char> sc(count * es + 1, 0x57);
          s = c.Scatter(is_root ? Buffer{want.data(), count * n, dt} : Buffer{}, {sc.data(), count, dt}, root, {algo})
                  .Wait();
          Expect(tag("scatter", how.c_str()), s, sc, in[me], dt, count);
        }

        // Alltoall: rank k's block p is its own input block; out block p is rank p's block me.
        // The large count is split among the ranks (still odd): every rank generates every
        // rank's input, n x n blocks.
        ++case_id;
        const size_t per = count > 1000 ? (count / n) | 1 : count, all = per * n;
        auto a = Inputs(dt, ReduceOp::kMax, all);
        std::vector<char> awant(all * es + 1), aout(all * es + 1, 0x58);
        for (size_t p = 0; p < n; ++p) std::memcpy(awant.data() + p * per * es, a[p].data() + me * per * es, per * es);
        s = c.Alltoall({a[me].data(), all, dt}, {aout.data(), all, dt}).Wait();
        Expect(tag("alltoall", ""), s, aout, awant, dt, all);
        std::vector<char> abuf = a[me];
        s = c.Alltoall({abuf.data(), all, dt}, {abuf.data(), all, dt}).Wait();
        Expect(tag("alltoall in-place", ""), s, abuf, awant, dt, all);

        // allgatherv: uneven blocks, some empty, laid out in reverse rank order with gaps.
        {
          ++case_id;
          const std::vector<size_t> counts = VCounts(count);
          Blocks b{counts, std::vector<size_t>(n)};
          size_t at = 0;
          for (size_t r = n; r-- > 0;) b.displs[r] = (at += 1), at += counts[r];
          const size_t extent = at;
          auto g = Inputs(dt, ReduceOp::kMax, *std::max_element(counts.begin(), counts.end()));
          std::vector<char> vwant(extent * es + 1, 0x35), vout(extent * es + 1, 0x35);
          for (size_t r = 0; r < n; ++r) std::memcpy(vwant.data() + b.displs[r] * es, g[r].data(), counts[r] * es);
          s = c.Allgatherv({g[me].data(), counts[me], dt}, {vout.data(), extent, dt}, b).Wait();
          Expect(tag("allgatherv", ""), s, vout, vwant, dt, extent);
        }
        // alltoallv: rank k sends rank p VCounts(count + k)[p] elements; blocks packed on the
        // way out, reversed with gaps on the way in.
        {
          ++case_id;
          std::vector<Blocks> send(n);
          for (size_t k = 0; k < n; ++k) send[k] = PackedBlocks(VCounts(count + k));
          Blocks recv{std::vector<size_t>(n), std::vector<size_t>(n)};
          size_t at = 0;
          for (size_t k = n; k-- > 0;)
            recv.counts[k] = send[k].counts[me], recv.displs[k] = (at += 2), at += recv.counts[k];
          const size_t extent = at;
          std::vector<std::vector<char>> ins;
          for (size_t k = 0; k < n; ++k) {
            size_t total = 0;
            for (size_t x : send[k].counts) total += x;
            std::vector<char> v(total * es + 1);
            FillInput(dt, ReduceOp::kMax, v.data(), total, case_id * 131 + k);
            ins.push_back(std::move(v));
          }
          std::vector<char> vwant(extent * es + 1, 0x36), vout(extent * es + 1, 0x36);
          for (size_t k = 0; k < n; ++k)
            std::memcpy(vwant.data() + recv.displs[k] * es, ins[k].data() + send[k].displs[me] * es,
                        recv.counts[k] * es);
          s = c.Alltoallv({ins[me].data(), ins[me].size() / es, dt}, send[me], {vout.data(), extent, dt}, recv).Wait();
          Expect(tag("alltoallv", ""), s, vout, vwant, dt, extent);
        }
      }
    }
    Status s = c.Barrier().Wait();
    ++checks;
    if (!s.ok()) {
      ++failures;
      std::printf("FAIL barrier: %s\n", s.ToString().c_str());
    }
  }
};

int RunMatrix(Communicator& c) {
  // The matrix allocates and frees megabytes per case: keep them in the heap instead of mapping
  // fresh (zeroed) pages every time, which cost as much as the checks.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  Matrix m{c};
  m.Run();
  std::printf("rank %d: matrix %s: %d checks, %d failed\n", c.rank(), m.failures ? "FAILED" : "ok", m.checks,
              m.failures);
  return m.failures ? 1 : 0;
}

// Runs allreduces of `count` floats on `on` (up to `calls`), `victim` (a rank of `job`) dying
// 0.4 s in; prints the first error with the time it took to see it, or that none came.
int AllreduceUntilError(Communicator& job, Communicator& on, int victim, size_t count, int calls,
                        MemKind kind = MemKind::kHost) {
  std::vector<float> in(count, 1.0f), out(count);
  float* pin = in.data();
  float* pout = out.data();
  if (kind == MemKind::kCuda) {  // device buffers (of 1.0 and garbage), freed at exit
    auto a = CudaAlloc(0, count * 4), b = CudaAlloc(0, count * 4);
    Status up = a.ok() && b.ok() ? CopyMem(*a, MemKind::kCuda, in.data(), MemKind::kHost, count * 4, nullptr)
                                 : (a.ok() ? b.status() : a.status());
    if (up.ok()) up = CudaStreamSync(nullptr);
    if (!up.ok()) {
      std::printf("rank %d: device buffers: %s\n", job.rank(), up.ToString().c_str());
      return 3;
    }
    pin = static_cast<float*>(*a);
    pout = static_cast<float*>(*b);
  }
  if (job.rank() == victim) test::KillSelfAfter(std::chrono::milliseconds(400));
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) {
    Status s = on.Allreduce({pin, count, DType::kF32, kind}, {pout, count, DType::kF32, kind}, ReduceOp::kSum).Wait();
    if (!s.ok()) {
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      std::printf("rank %d: error after %.0f ms: %s\n", job.rank(), ms, s.ToString().c_str());
      std::fflush(stdout);
      return 1;
    }
  }
  std::printf("rank %d: no error seen\n", job.rank());
  return 0;
}

// 32 MiB of f32 per call: each takes tens of milliseconds.
int RunKill(Communicator& c, int victim) { return AllreduceUntilError(c, c, victim, 8 << 20, 1000); }

// Halves of the job (split), each running allreduces on its own communicator; `victim`, in the
// second half, dies 0.4 s in. Every survivor, in either half, must fail naming it: its half's
// ranks see the lost connection, the other half hears their abort over the shared connections.
int RunSplitKill(Communicator& c, int victim) {
  auto half = c.Split(c.rank() * 2 / c.size(), c.rank());
  if (!half.ok()) {
    std::printf("rank %d: split failed: %s\n", c.rank(), half.status().ToString().c_str());
    return 1;
  }
  return AllreduceUntilError(c, **half, victim, 1 << 20, 100000);
}

#if HOOP_TEST_HAVE_OFI
// Over libfabric's shm provider: `victim`, after a first allreduce, takes the lock of its own
// region ("own") or of every peer's region mapped here ("peers"), as the provider does inside a
// send or its progress, and dies holding it. The others' allreduces (their first is its first)
// must fail naming it, not spin in the provider (transport/ofi/shm_lock_rescue.h).
int RunLockKill(Communicator& c, int victim, const std::string& whose) {
  const size_t count = 1 << 16;
  if (c.rank() != victim) return AllreduceUntilError(c, c, -1, count, 100000);
  std::vector<float> in(count, 1.0f), out(count);
  Status s = c.Allreduce({in.data(), count, DType::kF32}, {out.data(), count, DType::kF32}, ReduceOp::kSum).Wait();
  if (!s.ok()) {
    std::printf("rank %d: first allreduce: %s\n", c.rank(), s.ToString().c_str());
    return 1;
  }
  int taken = 0;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const size_t at = line.find("/dev/shm/");
    if (at == std::string::npos) continue;
    std::string name = line.substr(at + 9);
    name = name.substr(0, name.find(' '));
    const int pid = std::atoi(name.c_str());
    if ((pid == ::getpid()) != (whose == "own")) continue;
    if (pthread_spinlock_t* lock = ShmLockRescue::LockOf(name, pid); lock && pthread_spin_lock(lock) == 0) ++taken;
  }
  std::printf("rank %d: took %d lock(s) (%s), dying\n", c.rank(), taken, whose.c_str());
  std::fflush(stdout);
  ::raise(SIGKILL);
  return 1;
}
#endif

int RunMismatch(Communicator& c) {
  size_t count = c.rank() == 0 ? 1000 : 999;
  std::vector<float> in(1000, 1.0f), out(1000);
  Status s = c.Allreduce({in.data(), count, DType::kF32}, {out.data(), count, DType::kF32}, ReduceOp::kSum).Wait();
  std::printf("rank %d: first: %s\n", c.rank(), s.ToString().c_str());
  Status again = c.Allreduce({in.data(), 10, DType::kF32}, {out.data(), 10, DType::kF32}, ReduceOp::kSum).Wait();
  std::printf("rank %d: second: %s\n", c.rank(), again.ToString().c_str());
  std::fflush(stdout);
  return s.ok() ? 0 : 1;
}

int RunStraggler(Communicator& c, int sleep_s) {
  if (c.rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(sleep_s));
  std::vector<float> in(4096, 1.0f), out(4096);
  auto t0 = std::chrono::steady_clock::now();
  Status s =
      c.Allreduce({in.data(), in.size(), DType::kF32}, {out.data(), out.size(), DType::kF32}, ReduceOp::kSum).Wait();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("rank %d: after %.1f s: %s\n", c.rank(), secs, s.ToString().c_str());
  return s.ok() ? 0 : 1;
}

}  // namespace
int RunCompress(Communicator& c);                                                  // compress_rank.cc
int RunCompressMismatch(Communicator& c);                                          // compress_rank.cc
int RunDeviceIpc(Communicator& c);                                                 // device_ipc_rank.cc
int RunDeterministic(Communicator& c, const Config& cfg, uint64_t seed, bool on);  // det_rank.cc
int RunStrangers(const Config& cfg);                                               // hostile_rank.cc
int RunFdFlood(const Config& cfg);                                                 // hostile_rank.cc
int RunTrace(Communicator& c, const std::string& dir, bool skip);                  // trace_rank.cc
int RunHang(Communicator& c, const std::string& kind, int culprit);                // trace_rank.cc
}  // namespace hoop

int main(int argc, char** argv) {
  using namespace hoop;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const char* usage =
      "usage: hoop-test-rank MODE [ARGS]\n"
      "  one rank of a multi-process test, run under hooprun; MODE is one of: matrix | kill VICTIM |\n"
      "  device_kill VICTIM | lock_kill VICTIM own|peers | split_kill VICTIM | mismatch | straggler SECONDS |\n"
      "  idle SECONDS | compress | compress_mismatch | device_ipc | deterministic [SEED] [off] | strangers |\n"
      "  fd_flood | trace DIR [skip] | hang KIND RANK\n";
  if (int code = test::AnswerUsage(argc, argv, "hoop-test-rank", usage); code >= 0) return code;
  std::string mode = argv[1];
  if (mode == "idle" && argc > 2) {
    std::this_thread::sleep_for(std::chrono::seconds(std::atoi(argv[2])));
    return 0;
  }
  if (mode == "strangers" || mode == "fd_flood") {
    auto cfg = Config::FromProcessEnv();
    if (!cfg.ok()) {
      std::fprintf(stderr, "hoop-test-rank: %s\n", cfg.status().message().c_str());
      return 2;
    }
    return mode == "strangers" ? RunStrangers(*cfg) : RunFdFlood(*cfg);
  }
  Config cfg;
  int exit_code = 0;
  auto job = test::JoinTestJob("hoop-test-rank", &cfg, &exit_code);
  if (!job) return exit_code;
  Communicator& c = *job->comm;
  if (mode == "matrix") return RunMatrix(c);
  if (mode == "kill" && argc > 2) return RunKill(c, std::atoi(argv[2]));
  // The same on CUDA device buffers (tests/gpu/kill_test.cc).
  if (mode == "device_kill" && argc > 2)
    return AllreduceUntilError(c, c, std::atoi(argv[2]), 8 << 20, 1000, MemKind::kCuda);
  if (mode == "mismatch") return RunMismatch(c);
#if HOOP_TEST_HAVE_OFI
  if (mode == "lock_kill" && argc > 3) return RunLockKill(c, std::atoi(argv[2]), argv[3]);
#endif
  if (mode == "split_kill" && argc > 2) return RunSplitKill(c, std::atoi(argv[2]));
  if (mode == "straggler" && argc > 2) return RunStraggler(c, std::atoi(argv[2]));
  if (mode == "compress") return RunCompress(c);
  if (mode == "compress_mismatch") return RunCompressMismatch(c);
  if (mode == "device_ipc") return RunDeviceIpc(c);
  if (mode == "trace" && argc > 2) return RunTrace(c, argv[2], argc > 3 && std::string(argv[3]) == "skip");
  if (mode == "hang" && argc > 3) return RunHang(c, argv[2], std::atoi(argv[3]));
  if (mode == "deterministic")
    return RunDeterministic(c, cfg, argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 53,
                            !(argc > 3 && std::string(argv[3]) == "off"));
  std::fprintf(stderr, "hoop-test-rank: unknown mode '%s'\n", mode.c_str());
  return 2;
}
