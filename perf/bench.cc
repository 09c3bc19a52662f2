// See bench.h. Every rank runs the same sequence of calls; the only collectives besides the
// measured one are a barrier before each timed repetition and small max/sum allreduces that
// gather the slowest rank's time and the wrong count, all outside the timed loop.
#include "perf/bench.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "collectives/testing/reference.h"
#include "common/device.h"

namespace hoop::perf {

double BusFactor(CollKind k, int n) {
  if (k == CollKind::kAllreduce) return 2.0 * (n - 1) / n;
  if (k == CollKind::kBroadcast || k == CollKind::kReduce) return 1.0;
  if (k == CollKind::kBarrier) return 0.0;
  return static_cast<double>(n - 1) / n;
}

Bench::Bench(Communicator& c, const PerfOptions& o, DType dtype, ReduceOp op)
    : c_(c), o_(o), dtype_(dtype), op_(op), n_(c.size()), esize_(DTypeSize(dtype)) {}

size_t Bench::CountFor(uint64_t bytes) const {
  size_t elems = bytes / esize_, n = static_cast<size_t>(n_);
  if (PerRankBlocks(o_.kind)) return elems / n * n;
  return o_.kind == CollKind::kBarrier ? 0 : elems;
}

Bench::Layout Bench::MakeLayout(uint64_t bytes, bool in_place) const {
  Layout l;
  size_t elems = bytes / esize_, n = static_cast<size_t>(n_), me = static_cast<size_t>(c_.rank());
  switch (o_.kind) {
    case CollKind::kAllgather:
    case CollKind::kAllgatherv:
    case CollKind::kGather: l.in_count = elems / n, l.out_count = elems / n * n; break;
    case CollKind::kReduceScatter:
    case CollKind::kReduceScatterv:
    case CollKind::kScatter: l.in_count = elems / n * n, l.out_count = elems / n; break;
    case CollKind::kAlltoall:
    case CollKind::kAlltoallv: l.in_count = l.out_count = elems / n * n; break;
    case CollKind::kBarrier: break;
    default: l.in_count = l.out_count = elems;
  }
  size_t in_b = l.in_count * esize_, out_b = l.out_count * esize_;
  if (!in_place) {
    l.a.resize(std::max<size_t>(in_b, 1)), l.b.resize(std::max<size_t>(out_b, 1));
    l.in = l.a.data(), l.out = l.b.data();
    return l;
  }
  l.a.resize(std::max<size_t>(std::max(in_b, out_b), 1));
  l.in = l.out = l.a.data();
  if (o_.kind == CollKind::kAllgather || o_.kind == CollKind::kAllgatherv || o_.kind == CollKind::kGather)
    l.in = l.a.data() + me * in_b;  // own block of out
  if (o_.kind == CollKind::kReduceScatter || o_.kind == CollKind::kReduceScatterv || o_.kind == CollKind::kScatter)
    l.out = l.a.data() + me * out_b;  // own block of in
  return l;
}

Bench::DeviceMem::~DeviceMem() { CudaFree(p, MemKind::kCuda); }

Status Bench::Mirror(Layout& l) const {
  if (!o_.cuda) return Status::Ok();
  HOOP_ASSIGN_OR_RETURN(l.da.p, CudaAlloc(o_.cuda_device, l.a.size()));
  char* base_a = static_cast<char*>(l.da.p);
  char* base_b = base_a;
  if (!l.b.empty()) {
    HOOP_ASSIGN_OR_RETURN(l.db.p, CudaAlloc(o_.cuda_device, l.b.size()));
    base_b = static_cast<char*>(l.db.p);
  }
  auto at = [&](char* p) {
    return p >= l.a.data() && p < l.a.data() + l.a.size() ? base_a + (p - l.a.data()) : base_b + (p - l.b.data());
  };
  l.din = at(l.in);
  l.dout = at(l.out);
  return Status::Ok();
}

Status Bench::Upload(Layout& l) const {
  if (!o_.cuda) return Status::Ok();
  HOOP_RETURN_IF_ERROR(CopyMem(l.da.p, MemKind::kCuda, l.a.data(), MemKind::kHost, l.a.size(), nullptr));
  if (l.db.p) HOOP_RETURN_IF_ERROR(CopyMem(l.db.p, MemKind::kCuda, l.b.data(), MemKind::kHost, l.b.size(), nullptr));
  return CudaStreamSync(nullptr);
}

Status Bench::Download(Layout& l) const {
  if (!o_.cuda) return Status::Ok();
  HOOP_RETURN_IF_ERROR(CopyMem(l.out, MemKind::kHost, l.dout, MemKind::kCuda, l.out_count * esize_, nullptr));
  return CudaStreamSync(nullptr);
}

// Fresh rank-specific input; in place this also restores what earlier calls overwrote.
// Compressed runs get mixed magnitudes, which their results are checked on.
void Bench::Fill(Layout& l, uint64_t seed) const { FillFor(l.in, l.in_count, seed, c_.rank()); }

void Bench::FillFor(void* buf, size_t count, uint64_t seed, int rank) const {
  const uint64_t s = seed * 1000 + static_cast<uint64_t>(rank);
  if (Compressed())
    FillMixed(dtype_, buf, count, s);
  else
    FillInput(dtype_, op_, buf, count, s);
}

bool Bench::Compressed() const {
  return o_.compression && *o_.compression != Compression::kNone && Compressible(dtype_, op_);
}

Work Bench::Launch(Layout& l, bool blocking) {
  const MemKind kind = o_.cuda ? MemKind::kCuda : MemKind::kHost;
  Buffer bi{o_.cuda ? l.din : l.in, l.in_count, dtype_, kind};
  Buffer bo{o_.cuda ? l.dout : l.out, l.out_count, dtype_, kind};
  CallOptions co{o_.algo, blocking};  // blocking: on the calling thread, done when it returns
  // fp16/bf16 only where they apply (-d all / -o all also visit the cases they do not).
  if (o_.compression &&
      (*o_.compression == Compression::kAuto || *o_.compression == Compression::kNone || Compressible(dtype_, op_)))
    co.compression = o_.compression;
  switch (o_.kind) {
    case CollKind::kAllreduce: return c_.Allreduce(bi, bo, op_, co);
    case CollKind::kBroadcast: return c_.Broadcast(bi, bo, o_.root, co);
    case CollKind::kAllgather: return c_.Allgather(bi, bo, co);
    case CollKind::kReduceScatter: return c_.ReduceScatter(bi, bo, op_, co);
    case CollKind::kReduce: return c_.Reduce(bi, bo, op_, o_.root, co);
    case CollKind::kGather: return c_.Gather(bi, bo, o_.root, co);
    case CollKind::kScatter: return c_.Scatter(bi, bo, o_.root, co);
    case CollKind::kAlltoall: return c_.Alltoall(bi, bo, co);
    // The v-forms with every rank's count alike (as OSU's osu_allgatherv and osu_alltoallv).
    case CollKind::kAllgatherv: return c_.Allgatherv(bi, bo, EvenBlocks(n_, l.in_count), co);
    case CollKind::kReduceScatterv:
      return c_.ReduceScatterv(bi, bo, std::vector<size_t>(static_cast<size_t>(n_), l.out_count), op_, co);
    case CollKind::kAlltoallv: {
      const Blocks even = EvenBlocks(n_, l.in_count / static_cast<size_t>(n_));
      return c_.Alltoallv(bi, even, bo, even, co);
    }
    case CollKind::kBarrier: break;
  }
  return c_.Barrier(co);
}

// Every iteration posts -m calls on the same buffers (as nccl-tests' aggregated calls) and waits
// for them; with -z 1 each runs on the calling thread and is done when posted.
StatusOr<double> Bench::TimedCalls(std::vector<Layout>& ls, int iters) {
  HOOP_RETURN_IF_ERROR(c_.Barrier().Wait());
  std::vector<Work> calls;
  calls.reserve(static_cast<size_t>(o_.agg));
  size_t next = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    calls.clear();
    for (int k = 0; k < o_.agg; ++k, next = (next + 1) % ls.size()) calls.push_back(Launch(ls[next], o_.blocking));
    for (auto& w : calls) HOOP_RETURN_IF_ERROR(w.Wait());
  }
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
              (static_cast<double>(iters) * o_.agg);
  double combined = 0;
  Buffer tb{&us, 1, DType::kF64, MemKind::kHost}, cb{&combined, 1, DType::kF64, MemKind::kHost};
  switch (o_.average) {
    case Average::kRank0: HOOP_RETURN_IF_ERROR(c_.Broadcast(tb, cb, 0).Wait()); break;
    case Average::kMean: HOOP_RETURN_IF_ERROR(c_.Allreduce(tb, cb, ReduceOp::kAvg).Wait()); break;
    case Average::kMin: HOOP_RETURN_IF_ERROR(c_.Allreduce(tb, cb, ReduceOp::kMin).Wait()); break;
    case Average::kMax: HOOP_RETURN_IF_ERROR(c_.Allreduce(tb, cb, ReduceOp::kMax).Wait()); break;
  }
  return combined;
}

StatusOr<Row> Bench::RunSize(uint64_t bytes, uint64_t seed, bool in_place, int iters) {
  std::vector<Layout> ls;
  for (int k = 0; k < o_.rotate; ++k) ls.push_back(MakeLayout(bytes, in_place));
  Layout& l = ls.front();
  Row row;
  row.dtype = dtype_;
  row.op = op_;
  row.bytes = std::max(l.in_count, l.out_count) * esize_;
  row.count = std::max(l.in_count, l.out_count);
  row.in_place = in_place;
  row.repeats = o_.repeats;
  auto fill_all = [&]() -> Status {
    for (Layout& x : ls) {
      Fill(x, seed);
      HOOP_RETURN_IF_ERROR(Upload(x));
    }
    return Status::Ok();
  };
  for (Layout& x : ls) HOOP_RETURN_IF_ERROR(Mirror(x));
  HOOP_RETURN_IF_ERROR(fill_all());
  HOOP_ASSIGN_OR_RETURN(double probe_us, TimedCalls(ls, 1));  // the first iteration: sizes the loop
  row.iters = iters > 0 ? iters : o_.iters > 0 ? o_.iters : AutoIters(row.bytes, probe_us * o_.agg);
  int warmup = o_.warmup >= 0 ? o_.warmup : AutoWarmup(row.iters);
  for (int i = 0; i < warmup * o_.agg; ++i) HOOP_RETURN_IF_ERROR(Launch(ls[static_cast<size_t>(i) % ls.size()]).Wait());
  std::vector<double> times;
  for (int r = 0; r < o_.repeats; ++r) {
    if (in_place) HOOP_RETURN_IF_ERROR(fill_all());  // repeated in-place sums would otherwise run into inf
    HOOP_ASSIGN_OR_RETURN(double t, TimedCalls(ls, row.iters));
    times.push_back(t);
  }
  std::sort(times.begin(), times.end());
  size_t m = times.size();
  row.time_us = m % 2 ? times[m / 2] : (times[m / 2 - 1] + times[m / 2]) / 2;
  row.min_us = times.front(), row.max_us = times.back();
  row.algbw = row.time_us > 0 ? static_cast<double>(row.bytes) / (row.time_us * 1e3) : 0;
  row.busbw = row.algbw * BusFactor(o_.kind, n_);
  // The count every rank passes alike decides the algorithm (CommCore::Resolve).
  const size_t desc_count = o_.kind == CollKind::kScatter ? l.out_count : l.in_count;
  row.algo = c_.ChosenAlgo(o_.kind, desc_count * esize_, o_.algo);
  if (Compressed() && *o_.compression != Compression::kAuto) row.algo = Algo::kRing;  // what compression runs
  if (o_.check) {
    HOOP_ASSIGN_OR_RETURN(int64_t wrong, Check(l, seed + 7777, &row.err_ratio));
    row.wrong = wrong;
  }
  return row;
}

// One more call on fresh data, compared with the reference; returns the wrong count summed over
// ranks. Output memory that is not also input is poisoned first, so stale results cannot pass.
StatusOr<int64_t> Bench::Check(Layout& l, uint64_t seed, double* err_ratio) {
  size_t in_b = l.in_count * esize_, out_b = l.out_count * esize_, me = static_cast<size_t>(c_.rank());
  if (l.in != l.out || o_.kind == CollKind::kAllgather || o_.kind == CollKind::kAllgatherv ||
      o_.kind == CollKind::kGather)
    std::memset(l.out, 0x5a, out_b);
  Fill(l, seed);
  HOOP_RETURN_IF_ERROR(Upload(l));
  HOOP_RETURN_IF_ERROR(Launch(l).Wait());
  HOOP_RETURN_IF_ERROR(Download(l));
  std::vector<std::vector<char>> inputs(static_cast<size_t>(n_), std::vector<char>(std::max<size_t>(in_b, 1)));
  std::vector<const void*> ptrs;
  for (int r = 0; r < n_; ++r) {
    FillFor(inputs[static_cast<size_t>(r)].data(), l.in_count, seed, r);
    ptrs.push_back(inputs[static_cast<size_t>(r)].data());
  }
  if (Compressed()) {  // within the bound, not exact; auto is held to fp16's, what it picks
    const Compression z = *o_.compression == Compression::kAuto ? Compression::kFp16 : *o_.compression;
    BoundCheck b = CheckCompressedBound(dtype_, op_, z, ptrs, l.out, l.out_count);
    int64_t outside = static_cast<int64_t>(b.outside), total = 0;
    Buffer wb{&outside, 1, DType::kI64, MemKind::kHost}, tb{&total, 1, DType::kI64, MemKind::kHost};
    HOOP_RETURN_IF_ERROR(c_.Allreduce(wb, tb, ReduceOp::kSum).Wait());
    Buffer rb{&b.worst, 1, DType::kF64, MemKind::kHost}, mb{err_ratio, 1, DType::kF64, MemKind::kHost};
    HOOP_RETURN_IF_ERROR(c_.Allreduce(rb, mb, ReduceOp::kMax).Wait());
    return total;
  }
  std::vector<char> want(std::max<size_t>(out_b, 1));
  // Rooted collectives that deliver to the root alone: the others' output is not checked.
  const bool checked = !((o_.kind == CollKind::kReduce || o_.kind == CollKind::kGather) && o_.root != c_.rank());
  switch (o_.kind) {
    case CollKind::kAllreduce:
    case CollKind::kReduce: ReferenceReduce(dtype_, op_, ptrs, want.data(), l.out_count); break;
    case CollKind::kBroadcast: std::memcpy(want.data(), ptrs[static_cast<size_t>(o_.root)], out_b); break;
    case CollKind::kAllgather:
    case CollKind::kAllgatherv:
    case CollKind::kGather:
      for (size_t r = 0; r < ptrs.size(); ++r) std::memcpy(want.data() + r * in_b, ptrs[r], in_b);
      break;
    case CollKind::kScatter:
      std::memcpy(want.data(), static_cast<const char*>(ptrs[static_cast<size_t>(o_.root)]) + me * out_b, out_b);
      break;
    case CollKind::kAlltoall:
    case CollKind::kAlltoallv: {
      const size_t block = out_b / static_cast<size_t>(n_);
      for (size_t r = 0; r < ptrs.size(); ++r)
        std::memcpy(want.data() + r * block, static_cast<const char*>(ptrs[r]) + me * block, block);
      break;
    }
    case CollKind::kReduceScatter:
    case CollKind::kReduceScatterv: {
      std::vector<char> full(std::max<size_t>(in_b, 1));
      ReferenceReduce(dtype_, op_, ptrs, full.data(), l.in_count);
      std::memcpy(want.data(), full.data() + me * out_b, out_b);
      break;
    }
    case CollKind::kBarrier: break;
  }
  int64_t wrong = checked ? static_cast<int64_t>(CountMismatches(dtype_, l.out, want.data(), l.out_count)) : 0;
  int64_t total = 0;
  Buffer wb{&wrong, 1, DType::kI64, MemKind::kHost}, tb{&total, 1, DType::kI64, MemKind::kHost};
  HOOP_RETURN_IF_ERROR(c_.Allreduce(wb, tb, ReduceOp::kSum).Wait());
  return total;
}

}  // namespace hoop::perf
