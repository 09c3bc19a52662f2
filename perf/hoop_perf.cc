// hoop-perf: nccl-tests-style bandwidth sweep of one collective. Every rank runs it (under
// hooprun, mpirun or srun); rank 0 prints the table and writes --json/--csv. The measurement of
// one size is in bench.cc, the output formats in report.cc.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "common/parse.h"
#include "common/version.h"

#include "perf/bench.h"
#include "perf/fusion_bench.h"
#include "perf/join.h"
#include "perf/report.h"

namespace hoop::perf {
namespace {

// Why a sweep up to `bytes` cannot run here, or "": more than one call can address, or buffers
// (two of SIZE, and with -c 1 every rank's input and a reference too) beyond this host's memory
// shared by its ranks. Every rank reaches the same answer, so all stop together.
std::string TooLarge(const Communicator& c, const PerfOptions& o, uint64_t bytes) {
  const std::string size = "-e " + FormatBytes(bytes);
  if (bytes > c.MaxCallBytes())
    return size + ": more than the " + FormatBytes(c.MaxCallBytes()) + " one call can address";
  const double per_rank = static_cast<double>(bytes) * (o.check ? c.size() + 3 : 2);
  const double memory = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  const double share = memory / std::max(1, c.local_size());
  if (per_rank > share) {
    char text[256];
    std::snprintf(text, sizeof text, "%s: each rank's buffers would need %.3g GB, more than its share of this host's "
                  "memory (%.3g GB for %d ranks)", size.c_str(), per_rank / 1e9, memory / 1e9, c.local_size());
    return text;
  }
  return "";
}

int Main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "fusion") return RunFusionBench(argc, argv);
  auto opts = ParsePerfOptions(argc, argv);
  if (!opts.ok()) {
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
  const PerfOptions& o = *opts;
  PerfJob pj = JoinPerfJob("hoop-perf", o.transport);
  if (!pj.job) return pj.exit_code;
  Communicator& c = *pj.job->comm;
  if (o.kind == CollKind::kBroadcast && o.root >= c.size()) {
    std::fprintf(stderr, "hoop-perf: --root %d is not a rank (size %d)\n", o.root, c.size());
    return 2;
  }
  const bool lead = c.rank() == 0;
  RunInfo info{&o, c.size(), c.transport_name(),
               o.compression ? CompressionName(*o.compression) : pj.cfg.compression};

  std::vector<bool> places;
  if (o.place != Place::kIn) places.push_back(false);
  if (o.place != Place::kOut && o.kind != CollKind::kBarrier) places.push_back(true);  // a barrier has no buffer
  if (places.empty()) places.push_back(false);
  std::vector<uint64_t> sizes;
  if (o.kind == CollKind::kBarrier) {
    sizes.push_back(0);
  } else {
    uint64_t bytes = o.min_bytes;
    if (bytes == 0) {  // one empty call, then on from one element (0 x factor stays 0 for ever)
      sizes.push_back(0);
      bytes = DTypeSize(o.dtype);
    }
    for (; bytes <= o.max_bytes; bytes *= o.factor) {
      sizes.push_back(bytes);
      if (bytes > UINT64_MAX / o.factor) break;
    }
  }
  if (!sizes.empty()) {
    if (std::string why = TooLarge(c, o, sizes.back()); !why.empty()) {
      if (lead) std::fprintf(stderr, "hoop-perf: %s\n", why.c_str());
      return 2;
    }
  }
  if (lead) PrintHeader(info);
  Bench bench(c, o);
  std::vector<Row> rows;
  uint64_t step = 0;
  for (uint64_t bytes : sizes) {
    ++step;
    for (bool in_place : places) {
      StatusOr<Row> row = Internal("not run");
      try {
        row = bench.RunSize(bytes, step, in_place);
      } catch (const std::bad_alloc&) {
        row = Unavailable("out of memory for its buffers");
      }
      if (!row.ok()) {
        std::fprintf(stderr, "hoop-perf: rank %d, %s of %llu bytes: %s\n", c.rank(), CollKindName(o.kind),
                     static_cast<unsigned long long>(bytes), row.status().message().c_str());
        return 1;
      }
      rows.push_back(*row);
      if (lead) PrintRow(info, *row);
    }
  }
  bool wrong = false;
  for (auto& r : rows) wrong |= r.wrong > 0;
  if (lead) {
    PrintSummary(info, rows);
    if (!o.json.empty() && !WriteJson(o.json, info, rows)) {
      std::fprintf(stderr, "hoop-perf: cannot write %s\n", o.json.c_str());
      return 1;
    }
    if (!o.csv.empty() && !WriteCsv(o.csv, info, rows)) {
      std::fprintf(stderr, "hoop-perf: cannot write %s\n", o.csv.c_str());
      return 1;
    }
  }
  return wrong ? 1 : 0;
}

}  // namespace
}  // namespace hoop::perf

int main(int argc, char** argv) { return hoop::perf::Main(argc, argv); }
