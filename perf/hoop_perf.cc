// hoop-perf: nccl-tests-style bandwidth sweep of one collective, over one or every dtype and op.
// Every rank runs it (under hooprun, mpirun or srun); rank 0 prints the table and writes
// --json/--csv as each size finishes. The measurement of one size is in bench.cc, the output
// formats in report.cc, the flags in perf_options.cc.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/device.h"
#include "common/locality.h"
#include "common/parse.h"
#include "common/version.h"

#include "perf/bench.h"
#include "perf/fusion_bench.h"
#include "perf/join.h"
#include "perf/report.h"
#include "perf/recorder_bench.h"
#include "perf/sendrecv_bench.h"

namespace hoop::perf {
namespace {

// Why a sweep up to `bytes` cannot run here, or "": more than one call can address, or buffers
// (two of SIZE per --rotate set, and with -c 1 every rank's input and a reference too) beyond this host's memory
// shared by its ranks. Every rank reaches the same answer, so all stop together.
std::string TooLarge(const Communicator& c, const PerfOptions& o, uint64_t bytes) {
  const std::string size = "-e " + FormatBytes(bytes);
  if (bytes > c.MaxCallBytes())
    return size + ": more than the " + FormatBytes(c.MaxCallBytes()) + " one call can address";
  const double per_rank = static_cast<double>(bytes) * (2 * o.rotate + (o.check ? c.size() + 1 : 0));
  const double memory = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  const double share = memory / std::max(1, c.local_size());
  if (per_rank > share) {
    char text[256];
    std::snprintf(text, sizeof text,
                  "%s: each rank's buffers would need %.3g GB, more than its share of this host's "
                  "memory (%.3g GB for %d ranks)",
                  size.c_str(), per_rank / 1e9, memory / 1e9, c.local_size());
    return text;
  }
  return "";
}

// Every rank's pid, host and back ends, for rank 0's header (as nccl-tests lists its devices).
StatusOr<std::vector<RankLine>> GatherRanks(Communicator& c) {
  struct Record {
    int32_t pid;
    char host[64], transport[60];
  };
  Record me{};
  me.pid = static_cast<int32_t>(::getpid());
  ::gethostname(me.host, sizeof me.host - 1);
  std::snprintf(me.transport, sizeof me.transport, "%s", c.transport_name().c_str());
  std::vector<Record> all(static_cast<size_t>(c.size()));
  Buffer in{&me, sizeof me, DType::kU8, MemKind::kHost},
      out{all.data(), sizeof me * all.size(), DType::kU8, MemKind::kHost};
  HOOP_RETURN_IF_ERROR(c.Allgather(in, out).Wait());
  std::vector<RankLine> lines;
  for (size_t r = 0; r < all.size(); ++r) {
    all[r].host[sizeof all[r].host - 1] = all[r].transport[sizeof all[r].transport - 1] = 0;
    lines.push_back({static_cast<int>(r), all[r].pid, all[r].host, all[r].transport});
  }
  return lines;
}

// Rank 0's verdict (0: go on), given to every rank so that all stop together.
int Agree(Communicator& c, int verdict) {
  int32_t v = verdict, out = 0;
  Buffer in{&v, 1, DType::kI32, MemKind::kHost}, ob{&out, 1, DType::kI32, MemKind::kHost};
  if (!c.Broadcast(in, ob, 0).Wait().ok()) return 1;
  return out;
}

int Main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "fusion") return RunFusionBench(argc, argv);
  if (argc > 1 && std::string(argv[1]) == "sendrecv") return RunSendRecvBench(argc, argv);
  if (argc > 1 && std::string(argv[1]) == "recorder") return RunRecorderBench(argc, argv);
  auto opts = ParsePerfOptions(argc, argv);
  if (!opts.ok()) {
    // Once per job, not once per rank: under a launcher, rank 0 says it (every rank exits 2).
    auto cfg = Config::FromProcessEnv();
    if (!cfg.ok() || cfg->rank == 0)
      std::fprintf(stderr, "hoop-perf: %s\n(run 'hoop-perf --help' for usage)\n", opts.status().message().c_str());
    return 2;
  }
  if (opts->help) {
    std::fputs(kPerfUsage, stdout);
    return 0;
  }
  if (opts->version) {
    std::printf("%s\n", VersionLine("hoop-perf").c_str());
    return 0;
  }
  PerfOptions& o = *opts;
  PerfJob pj = JoinPerfJob("hoop-perf", o.transport, o.timeout_s);
  if (!pj.job) return pj.exit_code;
  Communicator& c = *pj.job->comm;
  const bool lead = c.rank() == 0;
  if (Rooted(o.kind) && o.root >= c.size()) {
    if (lead) std::fprintf(stderr, "hoop-perf: --root %d is not a rank (size %d)\n", o.root, c.size());
    return 2;
  }
  if (o.cuda) {
    // Each rank takes its default device (common/locality.h: by local rank); every rank learns
    // whether all of them could.
    std::string why;
    auto d = DefaultCudaDevice(c.rank(), c.local_rank());
    if (!d.ok()) {
      why = d.status().message();
    } else {
      o.cuda_device = *d;
      if (Status s = CudaSetDevice(o.cuda_device); !s.ok()) why = s.message();
    }
    if (!why.empty()) std::fprintf(stderr, "hoop-perf: rank %d: --device cuda: %s\n", c.rank(), why.c_str());
    int32_t mine = why.empty() ? 0 : 1, any = 0;
    Buffer mb{&mine, 1, DType::kI32, MemKind::kHost}, ab{&any, 1, DType::kI32, MemKind::kHost};
    if (!c.Allreduce(mb, ab, ReduceOp::kMax).Wait().ok() || any != 0) return 2;
  }
  RunInfo info{
      &o, c.size(), c.transport_name(), o.compression ? CompressionName(*o.compression) : pj.cfg.compression, {}};
  auto ranks = GatherRanks(c);
  if (!ranks.ok()) {
    std::fprintf(stderr, "hoop-perf: rank %d: %s\n", c.rank(), ranks.status().message().c_str());
    return 1;
  }
  info.rank_lines = *ranks;

  // Sizes: every rank reaches the same verdicts, so all stop together.
  std::vector<uint64_t> sizes = SweepSizes(o);
  if (std::string why = TooLarge(c, o, sizes.back()); !why.empty()) {
    if (lead) std::fprintf(stderr, "hoop-perf: %s\n", why.c_str());
    return 2;
  }
  for (DType d : o.dtypes) {
    Bench probe(c, o, d, o.ops[0]);
    if (o.min_bytes > 0 && o.kind != CollKind::kBarrier && probe.CountFor(o.min_bytes) == 0) {
      const bool per_rank = PerRankBlocks(o.kind);
      const uint64_t least = DTypeSize(d) * (per_rank ? static_cast<uint64_t>(c.size()) : 1);
      if (lead)
        std::fprintf(stderr,
                     "hoop-perf: -b %llu is less than one %s element%s (%llu bytes): give -b 0 for one empty "
                     "call, or -b %llu or more\n",
                     static_cast<unsigned long long>(o.min_bytes), DTypeName(d), per_rank ? " per rank" : "",
                     static_cast<unsigned long long>(least), static_cast<unsigned long long>(least));
      return 2;
    }
  }
  RowFiles files;
  std::string unwritable = lead ? files.Open(info) : "";
  if (lead && !unwritable.empty()) std::fprintf(stderr, "hoop-perf: %s\n", unwritable.c_str());
  if (Agree(c, unwritable.empty() ? 0 : 2) != 0) return 2;

  if (lead) PrintHeader(info);
  if (lead && o.cuda)
    PrintCaseNote("buffers: CUDA device memory, each rank on device (local rank mod " +
                  std::to_string(CudaDeviceCount().value()) + "); rank 0 on device " + std::to_string(o.cuda_device) +
                  ", its calls' device memory moved " + c.DeviceRoute(o.cuda_device));
  if (lead && o.rotate > 1)
    PrintCaseNote("buffers: " + std::to_string(o.rotate) + " sets per size, each call on the next (--rotate)");
  std::vector<Row> rows;
  const bool compressing =
      o.compression && (*o.compression == Compression::kFp16 || *o.compression == Compression::kBf16);
  const std::vector<ReduceOp> ops = Reduces(o.kind) ? o.ops : std::vector<ReduceOp>{o.ops[0]};
  if (lead && Reduces(o.kind)) {  // -d all / -o all: say once which pairs have no meaning
    std::string skipped;
    for (DType d : o.dtypes)
      for (ReduceOp op : ops)
        if (!OpApplies(d, op))
          skipped += std::string(skipped.empty() ? "" : ", ") + DTypeName(d) + " " + ReduceOpName(op);
    if (!skipped.empty()) PrintCaseNote("skipped, no such reduction: " + skipped);
  }
  for (const std::string& note : o.notes)
    if (lead) PrintCaseNote(note);
  // One sweep over every dtype, op and size; -N runs it again (nccl-tests' run_cycles).
  auto sweep = [&]() -> int {
    for (DType d : o.dtypes) {
      for (ReduceOp op : ops) {
        if (Reduces(o.kind) && !OpApplies(d, op)) continue;
        if (lead && compressing && !Compressible(d, op))
          PrintCaseNote(std::string(DTypeName(d)) + " " + ReduceOpName(op) + ": uncompressed (" +
                        CompressionName(*o.compression) + " applies to f32/f64 sum and avg)");
        Bench bench(c, o, d, op);
        uint64_t step = 0;
        bool said_empty = false;
        for (uint64_t bytes : sizes) {
          ++step;
          const size_t count = bench.CountFor(bytes);
          if (count == 0 && bytes > 0) continue;  // below one element: the 0-byte row covers it
          if (lead && bytes == 0 && o.kind != CollKind::kBarrier && !said_empty) {
            PrintCaseNote("size 0: one row of empty calls (count 0), then on from one element");
            said_empty = true;
          }
          SizeRows pair;
          int iters = 0;
          for (bool in_place : {false, true}) {
            if (in_place ? (o.place == Place::kOut || o.kind == CollKind::kBarrier) : o.place == Place::kIn) continue;
            StatusOr<Row> row = Internal("not run");
            try {
              row = bench.RunSize(bytes, step, in_place, iters);
            } catch (const std::bad_alloc&) {
              row = Unavailable("out of memory for its buffers");
            }
            if (!row.ok()) {
              std::fprintf(stderr, "hoop-perf: rank %d, %s of %llu bytes (%s): %s\n", c.rank(), CollKindName(o.kind),
                           static_cast<unsigned long long>(bytes), DTypeName(d), row.status().message().c_str());
              return 1;
            }
            iters = row->iters;
            rows.push_back(*row);
            (in_place ? pair.in : pair.out) = *row;
            std::string why;
            if (lead && !files.Add(info, *row, &why)) {
              std::fprintf(stderr, "hoop-perf: %s\n", why.c_str());
              return 1;
            }
          }
          if (lead) PrintRow(info, pair);
        }
      }
    }
    return 0;
  };
  for (int cycle = 1; cycle <= o.cycles; ++cycle) {
    if (lead && o.cycles > 1)
      PrintCaseNote("cycle " + std::to_string(cycle) + " of " + std::to_string(o.cycles) + " (-N)");
    if (int code = sweep(); code != 0) return code;
  }
  bool wrong = false;
  for (auto& r : rows) wrong |= r.wrong > 0;
  if (lead) PrintSummary(info, rows);
  return wrong ? 1 : 0;
}

}  // namespace
}  // namespace hoop::perf

int main(int argc, char** argv) { return hoop::perf::Main(argc, argv); }
