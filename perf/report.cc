// See report.h. The table's columns, in order: size, count, type, redop, place, algo, iters,
// time, spread, algbw, busbw, #wrong, and err/bnd when the data travels compressed; a '#'
// starts every line that is not a row.
#include "perf/report.h"

#include <cstdio>
#include <fstream>

namespace hoop::perf {
namespace {

const char* OpColumn(const PerfOptions& o) {
  return o.kind == CollKind::kAllreduce || o.kind == CollKind::kReduceScatter ? ReduceOpName(o.op) : "none";
}

double SpreadPct(const Row& r) { return r.time_us > 0 ? 100.0 * (r.max_us - r.min_us) / r.time_us : 0; }

bool Compressed(const RunInfo& info) { return info.o->kind == CollKind::kAllreduce && info.compression != "none"; }

}  // namespace

void PrintHeader(const RunInfo& info) {
  const PerfOptions& o = *info.o;
  std::printf("# hoop-perf %s: %d ranks, transport %s, dtype %s, op %s, algo %s, repeats %d, check %d%s%s\n",
              CollKindName(o.kind), info.ranks, info.transport.c_str(), DTypeName(o.dtype), ReduceOpName(o.op),
              AlgoName(o.algo), o.repeats, o.check ? 1 : 0, Compressed(info) ? ", compression " : "",
              Compressed(info) ? info.compression.c_str() : "");
  std::printf("#%12s %12s %5s %5s %5s %13s %5s %11s %7s %8s %8s %7s%s\n", "size", "count", "type", "redop", "place",
              "algo", "iters", "time", "spread", "algbw", "busbw", "#wrong", Compressed(info) ? "  err/bnd" : "");
  std::printf("#%12s %12s %5s %5s %5s %13s %5s %11s %7s %8s %8s %7s\n", "(B)", "(elements)", "", "", "", "", "",
              "(us)", "(%)", "(GB/s)", "(GB/s)", "");
  std::fflush(stdout);
}

void PrintRow(const RunInfo& info, const Row& r) {
  char err[32] = "";
  if (Compressed(info)) {
    if (r.err_ratio < 0) std::snprintf(err, sizeof err, "  %7s", "N/A");
    else std::snprintf(err, sizeof err, "  %7.3f", r.err_ratio);
  }
  std::printf(" %12llu %12llu %5s %5s %5s %13s %5d %11.2f %7.1f %8.3f %8.3f %7s%s\n",
              static_cast<unsigned long long>(r.bytes), static_cast<unsigned long long>(r.count),
              info.o->kind == CollKind::kBarrier ? "none" : DTypeName(info.o->dtype), OpColumn(*info.o), r.in_place ? "in" : "out", AlgoName(r.algo), r.iters,
              r.time_us, SpreadPct(r), r.algbw, r.busbw, r.wrong < 0 ? "N/A" : std::to_string(r.wrong).c_str(), err);
  std::fflush(stdout);
}

void PrintSummary(const RunInfo& info, const std::vector<Row>& rows) {
  double sum = 0;
  long long wrong = 0;
  for (auto& r : rows) sum += r.busbw, wrong += r.wrong > 0 ? r.wrong : 0;
  std::printf("# Out of bounds values : %lld %s\n", wrong,
              info.o->check ? (wrong ? "FAILED" : "OK") : "(not checked; use -c 1)");
  std::printf("# Avg bus bandwidth    : %.3f GB/s\n", rows.empty() ? 0 : sum / static_cast<double>(rows.size()));
}

bool WriteJson(const std::string& path, const RunInfo& info, const std::vector<Row>& rows) {
  const PerfOptions& o = *info.o;
  std::ofstream f(path);
  f << "[\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    char buf[768];
    std::snprintf(buf, sizeof(buf),
                  "  {\"collective\": \"%s\", \"algo\": \"%s\", \"transport\": \"%s\", \"dtype\": \"%s\", "
                  "\"op\": \"%s\", \"ranks\": %d, \"bytes\": %llu, \"in_place\": %s, \"iters\": %d, "
                  "\"repeats\": %d, \"time_us\": %.3f, \"time_min_us\": %.3f, \"time_max_us\": %.3f, "
                  "\"algbw_gbps\": %.4f, \"busbw_gbps\": %.4f, \"compression\": \"%s\", \"err_ratio\": %.4f, "
                  "\"wrong\": %lld}%s\n",
                  CollKindName(o.kind), AlgoName(r.algo), info.transport.c_str(), DTypeName(o.dtype),
                  ReduceOpName(o.op), info.ranks, static_cast<unsigned long long>(r.bytes),
                  r.in_place ? "true" : "false", r.iters, r.repeats, r.time_us, r.min_us, r.max_us, r.algbw, r.busbw,
                  Compressed(info) ? info.compression.c_str() : "none", r.err_ratio, static_cast<long long>(r.wrong),
                  i + 1 < rows.size() ? "," : "");
    f << buf;
  }
  f << "]\n";
  return static_cast<bool>(f.flush());
}

bool WriteCsv(const std::string& path, const RunInfo& info, const std::vector<Row>& rows) {
  const PerfOptions& o = *info.o;
  std::ofstream f(path);
  f << "collective,algo,transport,dtype,op,ranks,bytes,in_place,iters,repeats,time_us,time_min_us,time_max_us,"
       "algbw_gbps,busbw_gbps,compression,err_ratio,wrong\n";
  for (const Row& r : rows) {
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%s,%s,%s,%s,%s,%d,%llu,%d,%d,%d,%.3f,%.3f,%.3f,%.4f,%.4f,%s,%.4f,%lld\n",
                  CollKindName(o.kind), AlgoName(r.algo), info.transport.c_str(), DTypeName(o.dtype),
                  ReduceOpName(o.op), info.ranks, static_cast<unsigned long long>(r.bytes), r.in_place ? 1 : 0,
                  r.iters, r.repeats, r.time_us, r.min_us, r.max_us, r.algbw, r.busbw,
                  Compressed(info) ? info.compression.c_str() : "none", r.err_ratio, static_cast<long long>(r.wrong));
    f << buf;
  }
  return static_cast<bool>(f.flush());
}

}  // namespace hoop::perf
