// See report.h. Table columns: size, count, type, redop, root, algo, iters, then per place
// (out-of-place, in-place): time, spread, algbw, busbw, #wrong, and err/bnd when the data
// travels compressed. A '#' starts every line that is not a row; "-" marks a column that does
// not apply (no op for broadcast and barrier, no root but for broadcast).
#include "perf/report.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/version.h"

namespace hoop::perf {
namespace {

double SpreadPct(const Row& r) { return r.time_us > 0 ? 100.0 * (r.max_us - r.min_us) / r.time_us : 0; }

bool Compressed(const RunInfo& info) { return info.o->kind == CollKind::kAllreduce && info.compression != "none"; }

// Wide enough for every algorithm's name, so no row shifts.
int AlgoWidth() {
  size_t w = 4;
  for (Algo a :
       {Algo::kAuto, Algo::kRing, Algo::kTree, Algo::kChain, Algo::kBinomial, Algo::kDissemination, Algo::kDoubling})
    w = std::max(w, std::strlen(AlgoName(a)));
  return static_cast<int>(w);
}

std::vector<bool> Places(const PerfOptions& o) {  // false: out of place
  if (o.kind == CollKind::kBarrier) return {false};
  if (o.place == Place::kOut) return {false};
  if (o.place == Place::kIn) return {true};
  return {false, true};
}

const char* OpName(const PerfOptions& o, const Row& r) { return Reduces(o.kind) ? ReduceOpName(r.op) : "none"; }

constexpr const char* kGroup = " %10s %6s %7s %7s %6s";  // time spread algbw busbw #wrong

}  // namespace

void PrintHeader(const RunInfo& info) {
  const PerfOptions& o = *info.o;
  std::string dtypes, ops;
  for (DType d : o.dtypes) dtypes.append(dtypes.empty() ? "" : ",").append(DTypeName(d));
  for (ReduceOp op : o.ops) ops.append(ops.empty() ? "" : ",").append(ReduceOpName(op));
  char step[64];
  if (o.step_bytes)
    std::snprintf(step, sizeof step, "%llu(bytes)", static_cast<unsigned long long>(o.step_bytes));
  else
    std::snprintf(step, sizeof step, "%llu(factor)", static_cast<unsigned long long>(o.factor));
  std::printf("# %s: %s, %d ranks\n", VersionLine("hoop-perf").c_str(), CollKindName(o.kind), info.ranks);
  std::printf(
      "#  minBytes %llu maxBytes %llu step: %s warmup iters: %s iters: %s agg iters: %d repeats: %d "
      "validation: %d average: %d (%s) blocking: %d\n",
      static_cast<unsigned long long>(o.min_bytes), static_cast<unsigned long long>(o.max_bytes), step,
      o.warmup >= 0 ? std::to_string(o.warmup).c_str() : "auto", o.iters > 0 ? std::to_string(o.iters).c_str() : "auto",
      o.agg, o.repeats, o.check ? 1 : 0, static_cast<int>(o.average), AverageName(o.average), o.blocking ? 1 : 0);
  std::printf("#  type: %s", o.kind == CollKind::kBarrier ? "none" : dtypes.c_str());
  if (Reduces(o.kind)) std::printf(" op: %s", ops.c_str());
  if (Rooted(o.kind)) std::printf(" root: %d", o.root);
  std::printf(" algo: %s transport: %s", AlgoName(o.algo), info.transport.c_str());
  if (o.kind == CollKind::kAllreduce) std::printf(" compression: %s", info.compression.c_str());
  if (o.timeout_s > 0) std::printf(" timeout: %g s", o.timeout_s);
  std::printf("\n#\n# Using ranks\n");
  for (const RankLine& r : info.rank_lines)
    std::printf("#  Rank %2d Pid %7d on %12s back end %s\n", r.rank, r.pid, r.host.c_str(), r.transport.c_str());
  std::printf("#\n");
  const int aw = AlgoWidth();
  const bool z = Compressed(info);
  const std::vector<bool> places = Places(o);
  const int group = 10 + 6 + 7 + 7 + 6 + 5 + (z ? 8 : 0);
  std::string top("#");
  top.append(static_cast<size_t>(12 + 1 + 12 + 1 + 5 + 1 + 5 + 1 + 4 + 1 + aw + 1 + 5), ' ');
  for (bool in : places) {
    const std::string label = in ? "in-place" : "out-of-place";
    const int pad = group - static_cast<int>(label.size());
    top.append(static_cast<size_t>(pad / 2 + 1), ' ').append(label).append(static_cast<size_t>(pad - pad / 2), ' ');
  }
  while (!top.empty() && top.back() == ' ') top.pop_back();
  std::printf("%s\n", top.c_str());
  std::printf("#%12s %12s %5s %5s %4s %*s %5s", "size", "count", "type", "redop", "root", aw, "algo", "iters");
  for (size_t i = 0; i < places.size(); ++i) {
    std::printf(kGroup, "time", "spread", "algbw", "busbw", "#wrong");
    if (z) std::printf(" %7s", "err/bnd");
  }
  std::printf("\n#%12s %12s %5s %5s %4s %*s %5s", "(B)", "(elements)", "", "", "", aw, "", "");
  for (size_t i = 0; i < places.size(); ++i) {
    std::printf(kGroup, "(us)", "(%)", "(GB/s)", "(GB/s)", "");
    if (z) std::printf(" %7s", "");
  }
  std::printf("\n");
  std::fflush(stdout);
}

void PrintCaseNote(const std::string& note) {
  std::printf("# %s\n", note.c_str());
  std::fflush(stdout);
}

void PrintRow(const RunInfo& info, const SizeRows& s) {
  const PerfOptions& o = *info.o;
  const Row& first = s.out ? *s.out : *s.in;
  const bool z = Compressed(info);
  std::printf(" %12llu %12llu %5s %5s %4s %*s %5d", static_cast<unsigned long long>(first.bytes),
              static_cast<unsigned long long>(first.count), o.kind == CollKind::kBarrier ? "-" : DTypeName(first.dtype),
              Reduces(o.kind) ? ReduceOpName(first.op) : "-", Rooted(o.kind) ? std::to_string(o.root).c_str() : "-",
              AlgoWidth(), AlgoName(first.algo), first.iters);
  for (bool in : Places(o)) {
    const std::optional<Row>& r = in ? s.in : s.out;
    if (!r) {
      std::printf(kGroup, "N/A", "", "", "", "");
      continue;
    }
    char time[32], spread[16], algbw[16], busbw[16];
    std::snprintf(time, sizeof time, "%.2f", r->time_us);
    std::snprintf(spread, sizeof spread, "%.1f", SpreadPct(*r));
    std::snprintf(algbw, sizeof algbw, "%.3f", r->algbw);
    std::snprintf(busbw, sizeof busbw, "%.3f", r->busbw);
    std::printf(kGroup, time, spread, algbw, busbw, r->wrong < 0 ? "N/A" : std::to_string(r->wrong).c_str());
    if (z) {
      if (r->err_ratio < 0)
        std::printf(" %7s", "N/A");
      else
        std::printf(" %7.3f", r->err_ratio);
    }
  }
  std::printf("\n");
  std::fflush(stdout);
}

void PrintSummary(const RunInfo& info, const std::vector<Row>& rows) {
  double sum = 0;
  long long wrong = 0;
  for (auto& r : rows) sum += r.busbw, wrong += r.wrong > 0 ? r.wrong : 0;
  std::printf("# Out of bounds values : %lld %s\n", wrong,
              info.o->check ? (wrong ? "FAILED" : "OK") : "(not checked: -c 0)");
  std::printf("# Avg bus bandwidth    : %.3f GB/s\n", rows.empty() ? 0 : sum / static_cast<double>(rows.size()));
}

std::string RowFiles::Open(const RunInfo& info) {
  const PerfOptions& o = *info.o;
  csv_path_ = o.csv;
  json_path_ = o.json;
  if (!csv_path_.empty()) {
    csv_.open(csv_path_, std::ios::trunc);
    if (!csv_) return "cannot write --csv " + csv_path_ + ": " + std::strerror(errno);
    csv_ << "collective,algo,transport,dtype,op,ranks,bytes,in_place,iters,repeats,time_us,time_min_us,time_max_us,"
            "algbw_gbps,busbw_gbps,compression,err_ratio,wrong,root\n";
    if (!csv_.flush()) return "cannot write --csv " + csv_path_;
  }
  if (!json_path_.empty()) {
    std::string why;
    if (!WriteJson(&why)) return "cannot write --json " + json_path_ + ": " + why;
  }
  return "";
}

bool RowFiles::Add(const RunInfo& info, const Row& r, std::string* why) {
  const PerfOptions& o = *info.o;
  const char* compression = Compressed(info) && Compressible(r.dtype, r.op) ? info.compression.c_str() : "none";
  const int root = Rooted(o.kind) ? o.root : -1;
  if (csv_.is_open()) {
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%s,%s,%s,%s,%s,%d,%llu,%d,%d,%d,%.3f,%.3f,%.3f,%.4f,%.4f,%s,%.4f,%lld,%d\n",
                  CollKindName(o.kind), AlgoName(r.algo), info.transport.c_str(), DTypeName(r.dtype), OpName(o, r),
                  info.ranks, static_cast<unsigned long long>(r.bytes), r.in_place ? 1 : 0, r.iters, r.repeats,
                  r.time_us, r.min_us, r.max_us, r.algbw, r.busbw, compression, r.err_ratio,
                  static_cast<long long>(r.wrong), root);
    csv_ << buf;
    if (!csv_.flush()) {
      *why = "cannot write --csv " + csv_path_;
      return false;
    }
  }
  if (!json_path_.empty()) {
    nlohmann::ordered_json j = {{"collective", CollKindName(o.kind)},
                                {"algo", AlgoName(r.algo)},
                                {"transport", info.transport},
                                {"dtype", DTypeName(r.dtype)},
                                {"op", OpName(o, r)},
                                {"ranks", info.ranks},
                                {"bytes", r.bytes},
                                {"in_place", r.in_place},
                                {"iters", r.iters},
                                {"repeats", r.repeats},
                                {"time_us", r.time_us},
                                {"time_min_us", r.min_us},
                                {"time_max_us", r.max_us},
                                {"algbw_gbps", r.algbw},
                                {"busbw_gbps", r.busbw},
                                {"compression", compression},
                                {"err_ratio", r.err_ratio},
                                {"wrong", r.wrong},
                                {"root", root}};
    json_rows_.push_back(j.dump());
    std::string w;
    if (!WriteJson(&w)) {
      *why = "cannot write --json " + json_path_ + ": " + w;
      return false;
    }
  }
  return true;
}

// The whole array, to a temporary file beside the target, then renamed over it.
bool RowFiles::WriteJson(std::string* why) {
  const std::string tmp = json_path_ + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) {
      *why = std::strerror(errno);
      return false;
    }
    f << "[";
    for (size_t i = 0; i < json_rows_.size(); ++i) f << (i ? ",\n  " : "\n  ") << json_rows_[i];
    f << "\n]\n";
    if (!f.flush()) {
      *why = "write failed";
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), json_path_.c_str()) != 0) {
    *why = std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace hoop::perf
