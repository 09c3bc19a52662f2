// See sendrecv_bench.h.
#include "perf/sendrecv_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "common/parse.h"
#include "perf/harness.h"
#include "perf/join.h"
#include "perf/sub_options.h"

namespace hoop::perf {
namespace {

using Options = SendRecvOptions;

using Clock = std::chrono::steady_clock;

struct Row {
  uint64_t bytes = 0;
  int lat_iters = 0, bw_iters = 0;
  double lat_us = 0, lat_spread = 0, bw_gbs = 0, bw_spread = 0;
  uint64_t wrong = 0;
};

unsigned char Pattern(uint64_t bytes, int from, size_t j) {
  return static_cast<unsigned char>(bytes * 7 + static_cast<uint64_t>(from) * 101 + j % 249);
}

class Bench {
 public:
  Bench(Communicator& c, uint64_t bytes) : c_(c), bytes_(bytes), out_(bytes + 1), in_(bytes + 1) {
    for (size_t j = 0; j < bytes; ++j) out_[j] = Pattern(bytes, c.rank(), j);
  }

  // Per one-way message, this rank's view (rank 1's is the same).
  StatusOr<double> Latency(int iters) {
    HOOP_RETURN_IF_ERROR(c_.Barrier().Wait());
    // The blocking calls hoop_send and hoop_recv make (no Work).
    const auto t0 = Clock::now();
    if (c_.rank() == 0) {
      for (int i = 0; i < iters; ++i) {
        HOOP_RETURN_IF_ERROR(c_.SendNow(Out(), 1, 1));
        HOOP_RETURN_IF_ERROR(c_.RecvNow(In(), 1, 1));
      }
    } else if (c_.rank() == 1) {
      for (int i = 0; i < iters; ++i) {
        HOOP_RETURN_IF_ERROR(c_.RecvNow(In(), 0, 1));
        HOOP_RETURN_IF_ERROR(c_.SendNow(Out(), 0, 1));
      }
    }
    return Microseconds(t0) / (2.0 * iters);
  }

  // GB/s as rank 0 sees it (the reply closes each window).
  StatusOr<double> Bandwidth(int iters) {
    HOOP_RETURN_IF_ERROR(c_.Barrier().Wait());
    std::vector<Work> w(kBandwidthWindow);
    char ack[4] = {};
    Buffer ab{ack, sizeof ack, DType::kU8, MemKind::kHost};
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) {
      if (c_.rank() == 0) {
        for (auto& x : w) x = c_.Send(Out(), 1, 2);
        for (auto& x : w) HOOP_RETURN_IF_ERROR(x.Wait());
        HOOP_RETURN_IF_ERROR(c_.RecvNow(ab, 1, 3));
      } else if (c_.rank() == 1) {
        for (auto& x : w) x = c_.Recv(In(), 0, 2);
        for (auto& x : w) HOOP_RETURN_IF_ERROR(x.Wait());
        HOOP_RETURN_IF_ERROR(c_.SendNow(ab, 0, 3));
      }
    }
    const double us = Microseconds(t0);
    return us > 0 ? static_cast<double>(bytes_) * kBandwidthWindow * iters / (us * 1e3) : 0;
  }

  // Bytes of the last message received that differ from what the peer sent (ranks 0 and 1).
  uint64_t Wrong() const {
    if (c_.rank() > 1) return 0;
    const int from = 1 - c_.rank();
    uint64_t n = 0;
    for (size_t j = 0; j < bytes_; ++j) n += in_[j] != Pattern(bytes_, from, j);
    return n;
  }

 private:
  Buffer Out() { return Buffer{out_.data(), bytes_, DType::kU8, MemKind::kHost}; }
  Buffer In() { return Buffer{in_.data(), bytes_, DType::kU8, MemKind::kHost}; }
  static double Microseconds(Clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  }

  Communicator& c_;
  uint64_t bytes_;
  std::vector<unsigned char> out_, in_;
};

double Spread(const std::vector<double>& v, double median) {
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return median > 0 ? (*hi - *lo) / median : 0;
}

// Rank 0's figure, on every rank.
StatusOr<double> FromRank0(Communicator& c, double v) {
  double out = 0;
  Buffer in{&v, 1, DType::kF64, MemKind::kHost}, ob{&out, 1, DType::kF64, MemKind::kHost};
  HOOP_RETURN_IF_ERROR(c.Broadcast(in, ob, 0).Wait());
  return out;
}

StatusOr<Row> Measure(Communicator& c, const Options& o, uint64_t bytes) {
  Row row;
  row.bytes = bytes;
  row.lat_iters = o.iters ? o.iters : PingPongIters(bytes);
  row.bw_iters = o.iters ? std::max(1, o.iters / 10) : BandwidthIters(bytes);
  Bench b(c, bytes);
  HOOP_RETURN_IF_ERROR(b.Latency(std::max(1, row.lat_iters / 10)).status());  // warm-up
  std::vector<double> lat, bw;
  for (int r = 0; r < o.repeats; ++r) {
    HOOP_ASSIGN_OR_RETURN(double l, b.Latency(row.lat_iters));
    HOOP_ASSIGN_OR_RETURN(double l0, FromRank0(c, l));
    lat.push_back(l0);
    HOOP_ASSIGN_OR_RETURN(double g, b.Bandwidth(row.bw_iters));
    HOOP_ASSIGN_OR_RETURN(double g0, FromRank0(c, g));
    bw.push_back(g0);
  }
  row.lat_us = Median(lat);
  row.lat_spread = Spread(lat, row.lat_us);
  row.bw_gbs = Median(bw);
  row.bw_spread = Spread(bw, row.bw_gbs);
  HOOP_RETURN_IF_ERROR(b.Latency(1).status());  // the checked message, both ways
  uint64_t wrong = b.Wrong(), total = 0;
  Buffer wb{&wrong, 1, DType::kI64, MemKind::kHost}, tb{&total, 1, DType::kI64, MemKind::kHost};
  HOOP_RETURN_IF_ERROR(c.Allreduce(wb, tb, ReduceOp::kSum).Wait());
  row.wrong = total;
  return row;
}

}  // namespace

int RunSendRecvBench(int argc, char** argv) {
  auto opts = ParseSendRecvOptions(argc, argv);
  if (!opts.ok()) {
    std::fprintf(stderr, "hoop-perf sendrecv: %s\n(run 'hoop-perf sendrecv --help' for usage)\n",
                 opts.status().message().c_str());
    return 2;
  }
  if (opts->help) {
    std::fputs(kSendRecvUsage, stdout);
    return 0;
  }
  PerfJob pj = JoinPerfJob("hoop-perf sendrecv", opts->transport);
  if (!pj.job) return pj.exit_code;
  Communicator& c = *pj.job->comm;
  const bool lead = c.rank() == 0;
  if (c.size() < 2) {
    std::fprintf(stderr,
                 "hoop-perf sendrecv: needs 2 ranks or more (ranks 0 and 1 measure): run it as "
                 "'hooprun -np 2 hoop-perf sendrecv'\n");
    return 2;
  }
  std::vector<uint64_t> sizes;
  for (uint64_t b = opts->min_bytes;; b = b ? b * opts->factor : 1) {
    sizes.push_back(b);
    if (b >= opts->max_bytes || b * opts->factor > opts->max_bytes) break;
  }
  if (lead)
    std::printf(
        "# hoop-perf sendrecv: ranks 0 and 1 of %d over %s; latency: half a ping-pong round trip "
        "(osu_latency), bandwidth: %d sends in flight then a reply (osu_bw); median of %d\n"
        "# %12s %10s %10s %8s %8s %10s %8s %8s\n",
        c.size(), c.transport_name().c_str(), kBandwidthWindow, opts->repeats, "size", "lat_iters", "lat_us", "spread",
        "windows", "bw_GB/s", "spread", "#wrong");
  std::vector<Row> rows;
  for (uint64_t bytes : sizes) {
    auto row = Measure(c, *opts, bytes);
    if (!row.ok()) {
      std::fprintf(stderr, "hoop-perf sendrecv: rank %d, %llu bytes: %s\n", c.rank(),
                   static_cast<unsigned long long>(bytes), row.status().message().c_str());
      return 1;
    }
    rows.push_back(*row);
    if (lead) {
      std::printf("  %12llu %10d %10.2f %7.0f%% %8d %10.3f %7.0f%% %8llu\n", static_cast<unsigned long long>(bytes),
                  row->lat_iters, row->lat_us, row->lat_spread * 100, row->bw_iters, row->bw_gbs, row->bw_spread * 100,
                  static_cast<unsigned long long>(row->wrong));
      std::fflush(stdout);
    }
  }
  uint64_t wrong = 0;
  for (const Row& r : rows) wrong += r.wrong;
  if (lead) {
    std::printf("# %s\n", wrong ? "WRONG BYTES: see #wrong" : "all messages checked: no wrong bytes");
    if (!opts->json.empty()) {
      std::FILE* out = std::fopen(opts->json.c_str(), "w");
      if (!out) {
        std::fprintf(stderr, "hoop-perf sendrecv: cannot write %s\n", opts->json.c_str());
        return 1;
      }
      std::fprintf(out, "[");
      for (size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        std::fprintf(
            out,
            "%s\n  {\"collective\": \"sendrecv\", \"ranks\": %d, \"transport\": \"%s\", \"bytes\": %llu, "
            "\"lat_iters\": %d, \"lat_us\": %.6g, \"lat_spread\": %.4f, \"bw_windows\": %d, \"bw_window\": %d, "
            "\"bw_GBps\": %.6g, \"bw_spread\": %.4f, \"wrong\": %llu}",
            i ? "," : "", c.size(), c.transport_name().c_str(), static_cast<unsigned long long>(r.bytes), r.lat_iters,
            r.lat_us, r.lat_spread, r.bw_iters, kBandwidthWindow, r.bw_gbs, r.bw_spread,
            static_cast<unsigned long long>(r.wrong));
      }
      std::fprintf(out, "\n]\n");
      std::fclose(out);
    }
  }
  return wrong ? 1 : 0;
}

}  // namespace hoop::perf
