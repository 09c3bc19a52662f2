// hoop-perf: nccl-tests-style bandwidth sweep of one collective. Every rank runs it (under
// hooprun, mpirun or srun); rank 0 prints the table. For each size: warm-up iterations, then
// timed ones between two barriers, reported as the slowest rank's mean; with -c 1, one more
// call on fresh rank-specific data is checked element by element against the reference.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "collectives/bootstrap.h"
#include "collectives/reference.h"
#include "perf/perf_options.h"

namespace hoop::perf {
namespace {

struct Row {
  uint64_t bytes, count;
  double time_us, algbw, busbw;
  uint64_t wrong;
  Algo algo;
};

double BusFactor(CollKind k, int n) {
  if (k == CollKind::kAllreduce) return 2.0 * (n - 1) / n;
  if (k == CollKind::kBroadcast) return 1.0;
  return static_cast<double>(n - 1) / n;
}

class Bench {
 public:
  Bench(Communicator& c, const PerfOptions& o) : c_(c), o_(o), n_(c.size()), esize_(DTypeSize(o.dtype)) {}

  // Element counts of (input, output) for a size in bytes.
  std::pair<size_t, size_t> Counts(uint64_t bytes) const {
    size_t elems = bytes / esize_;
    size_t n = static_cast<size_t>(n_);
    switch (o_.kind) {
      case CollKind::kAllgather: return {elems / n, elems / n * n};
      case CollKind::kReduceScatter: return {elems / n * n, elems / n};
      default: return {elems, elems};
    }
  }

  Work Launch(std::vector<char>& in, std::vector<char>& out, size_t in_count, size_t out_count) {
    Buffer bi{in.data(), in_count, o_.dtype, MemKind::kHost};
    Buffer bo{out.data(), out_count, o_.dtype, MemKind::kHost};
    CallOptions co{o_.algo, true};  // blocking: the caller waits at once anyway
    switch (o_.kind) {
      case CollKind::kAllreduce: return c_.Allreduce(bi, bo, o_.op, co);
      case CollKind::kBroadcast: return c_.Broadcast(bi, bo, o_.root, co);
      case CollKind::kAllgather: return c_.Allgather(bi, bo, co);
      case CollKind::kReduceScatter: return c_.ReduceScatter(bi, bo, o_.op, co);
      case CollKind::kBarrier: break;
    }
    return c_.Barrier(co);
  }

  StatusOr<Row> RunSize(uint64_t bytes, uint64_t seed) {
    auto [in_count, out_count] = Counts(bytes);
    std::vector<char> in(std::max<size_t>(in_count * esize_, 1)), out(std::max<size_t>(out_count * esize_, 1));
    FillInput(o_.dtype, o_.op, in.data(), in_count, seed * 1000 + static_cast<uint64_t>(c_.rank()));
    for (int i = 0; i < o_.warmup; ++i) HOOP_RETURN_IF_ERROR(Launch(in, out, in_count, out_count).Wait());
    HOOP_RETURN_IF_ERROR(c_.Barrier().Wait());
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < o_.iters; ++i) HOOP_RETURN_IF_ERROR(Launch(in, out, in_count, out_count).Wait());
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / o_.iters;
    double slowest = 0;
    Buffer tb{&us, 1, DType::kF64, MemKind::kHost}, sb{&slowest, 1, DType::kF64, MemKind::kHost};
    HOOP_RETURN_IF_ERROR(c_.Allreduce(tb, sb, ReduceOp::kMax).Wait());

    Row row{};
    row.bytes = std::max(in_count, out_count) * esize_;
    row.count = std::max(in_count, out_count);
    row.time_us = slowest;
    row.algbw = slowest > 0 ? static_cast<double>(row.bytes) / (slowest * 1e3) : 0;  // GB/s
    row.busbw = row.algbw * BusFactor(o_.kind, n_);
    row.algo = c_.ChosenAlgo(o_.kind, out_count * esize_, o_.algo);
    if (o_.check) {
      HOOP_ASSIGN_OR_RETURN(int64_t wrong, Check(in, out, in_count, out_count, seed));
      row.wrong = static_cast<uint64_t>(wrong);
    }
    return row;
  }

 private:
  // One more call on the same data, compared with the reference; returns the wrong count summed
  // over ranks.
  StatusOr<int64_t> Check(std::vector<char>& in, std::vector<char>& out, size_t in_count, size_t out_count,
                          uint64_t seed) {
    std::fill(out.begin(), out.end(), 0x5a);  // stale results must not pass
    HOOP_RETURN_IF_ERROR(Launch(in, out, in_count, out_count).Wait());
    std::vector<std::vector<char>> inputs(static_cast<size_t>(n_), std::vector<char>(in.size()));
    std::vector<const void*> ptrs;
    for (int r = 0; r < n_; ++r) {
      FillInput(o_.dtype, o_.op, inputs[static_cast<size_t>(r)].data(), in_count, seed * 1000 + static_cast<uint64_t>(r));
      ptrs.push_back(inputs[static_cast<size_t>(r)].data());
    }
    std::vector<char> want(out.size());
    size_t rank = static_cast<size_t>(c_.rank());
    switch (o_.kind) {
      case CollKind::kAllreduce: ReferenceReduce(o_.dtype, o_.op, ptrs, want.data(), out_count); break;
      case CollKind::kBroadcast:
        std::memcpy(want.data(), inputs[static_cast<size_t>(o_.root)].data(), out_count * esize_);
        break;
      case CollKind::kAllgather:
        for (size_t r = 0; r < ptrs.size(); ++r)
          std::memcpy(want.data() + r * in_count * esize_, ptrs[r], in_count * esize_);
        break;
      case CollKind::kReduceScatter: {
        std::vector<char> full(in.size());
        ReferenceReduce(o_.dtype, o_.op, ptrs, full.data(), in_count);
        std::memcpy(want.data(), full.data() + rank * out_count * esize_, out_count * esize_);
        break;
      }
      case CollKind::kBarrier: break;
    }
    int64_t wrong = static_cast<int64_t>(CountMismatches(o_.dtype, out.data(), want.data(), out_count)), total = 0;
    Buffer wb{&wrong, 1, DType::kI64, MemKind::kHost}, tb{&total, 1, DType::kI64, MemKind::kHost};
    HOOP_RETURN_IF_ERROR(c_.Allreduce(wb, tb, ReduceOp::kSum).Wait());
    return total;
  }

  Communicator& c_;
  const PerfOptions& o_;
  int n_;
  size_t esize_;
};

void WriteJson(const std::string& path, const PerfOptions& o, const std::vector<Row>& rows, int n,
               const std::string& transport) {
  std::ofstream f(path);
  f << "[\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    char buf[512];
    std::snprintf(buf, sizeof(buf),
                  "  {\"collective\": \"%s\", \"algo\": \"%s\", \"transport\": \"%s\", \"dtype\": \"%s\", "
                  "\"op\": \"%s\", \"ranks\": %d, \"bytes\": %llu, \"time_us\": %.3f, \"algbw_gbps\": %.4f, "
                  "\"busbw_gbps\": %.4f, \"wrong\": %lld}%s\n",
                  CollKindName(o.kind), AlgoName(r.algo), transport.c_str(), DTypeName(o.dtype),
                  ReduceOpName(o.op), n, static_cast<unsigned long long>(r.bytes), r.time_us, r.algbw, r.busbw,
                  o.check ? static_cast<long long>(r.wrong) : -1LL, i + 1 < rows.size() ? "," : "");
    f << buf;
  }
  f << "]\n";
}

int Main(int argc, char** argv) {
  auto opts = ParsePerfOptions(argc, argv);
  if (!opts.ok()) {
    std::fprintf(stderr, "hoop-perf: %s\n(run 'hoop-perf --help' for usage)\n", opts.status().message().c_str());
    return 2;
  }
  if (opts->help) {
    std::fputs(kPerfUsage, stdout);
    return 0;
  }
  auto cfg = Config::FromProcessEnv();
  if (!cfg.ok()) {
    std::fprintf(stderr, "hoop-perf: %s\n", cfg.status().message().c_str());
    return 2;
  }
  auto job = JoinJob(*cfg);
  if (!job.ok()) {
    std::fprintf(stderr, "hoop-perf: %s\n", job.status().message().c_str());
    return 1;
  }
  Communicator& c = *(*job)->comm;
  const PerfOptions& o = *opts;
  if (o.kind == CollKind::kBroadcast && o.root >= c.size()) {
    std::fprintf(stderr, "hoop-perf: --root %d is not a rank (size %d)\n", o.root, c.size());
    return 2;
  }
  const bool lead = c.rank() == 0;
  if (lead) {
    std::printf("# hoop-perf %s: %d ranks, transport %s, dtype %s, op %s, algo %s, iters %d, warmup %d, check %d\n",
                CollKindName(o.kind), c.size(), c.transport_name().c_str(), DTypeName(o.dtype), ReduceOpName(o.op),
                AlgoName(o.algo), o.iters, o.warmup, o.check ? 1 : 0);
    std::printf("#%13s %13s %6s %6s %8s %12s %9s %9s %8s\n", "size", "count", "type", "redop", "algo", "time",
                "algbw", "busbw", "#wrong");
    std::printf("#%13s %13s %6s %6s %8s %12s %9s %9s %8s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)",
                "(GB/s)", "");
    std::fflush(stdout);
  }
  Bench bench(c, o);
  std::vector<Row> rows;
  uint64_t wrong_total = 0;
  uint64_t step = 0;
  for (uint64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor, ++step) {
    auto row = bench.RunSize(bytes, step + 1);
    if (!row.ok()) {
      std::fprintf(stderr, "hoop-perf: %s\n", row.status().message().c_str());
      return 1;
    }
    rows.push_back(*row);
    wrong_total += row->wrong;
    if (lead) {
      std::printf(" %13llu %13llu %6s %6s %8s %12.2f %9.3f %9.3f %8s\n", static_cast<unsigned long long>(row->bytes),
                  static_cast<unsigned long long>(row->count), DTypeName(o.dtype),
                  o.kind == CollKind::kAllreduce || o.kind == CollKind::kReduceScatter ? ReduceOpName(o.op) : "none",
                  AlgoName(row->algo), row->time_us, row->algbw, row->busbw,
                  o.check ? std::to_string(row->wrong).c_str() : "N/A");
      std::fflush(stdout);
    }
    if (bytes > UINT64_MAX / o.factor) break;
  }
  if (lead) {
    double sum = 0;
    for (auto& r : rows) sum += r.busbw;
    std::printf("# Out of bounds values : %llu %s\n", static_cast<unsigned long long>(wrong_total),
                o.check ? (wrong_total ? "FAILED" : "OK") : "(not checked; use -c 1)");
    std::printf("# Avg bus bandwidth    : %.3f GB/s\n", rows.empty() ? 0 : sum / static_cast<double>(rows.size()));
    if (!o.json.empty()) WriteJson(o.json, o, rows, c.size(), c.transport_name());
  }
  return wrong_total ? 1 : 0;
}

}  // namespace
}  // namespace hoop::perf

int main(int argc, char** argv) { return hoop::perf::Main(argc, argv); }
