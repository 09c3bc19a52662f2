// See harness.h.
#include "perf/harness.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "common/parse.h"

namespace hoop::perf {

int PingPongIters(uint64_t bytes) {
  const uint64_t base = bytes <= 8192 ? 10000 : 1000;
  const uint64_t cap = bytes ? (uint64_t{1} << 30) / (2 * bytes) : base;
  return static_cast<int>(std::max<uint64_t>(20, std::min(base, cap)));
}

int BandwidthIters(uint64_t bytes) {
  const uint64_t cap = bytes ? (uint64_t{1} << 30) / (kBandwidthWindow * bytes) : 1000;
  return static_cast<int>(
      std::max<uint64_t>(5, std::min<uint64_t>(static_cast<uint64_t>(PingPongIters(bytes)) / 10, cap)));
}

int AutoIters(uint64_t bytes) {
  uint64_t n = (256ull << 20) / std::max<uint64_t>(bytes, 1);
  return static_cast<int>(std::clamp<uint64_t>(n, 5, 1000));
}

int AutoIters(uint64_t bytes, double probe_us) {
  int by_time = probe_us > 0 ? static_cast<int>(std::min(2e6 / probe_us, 1e6)) : 1000000;
  return std::min(AutoIters(bytes), std::max(5, by_time));
}

int AutoWarmup(int iters) { return std::max(1, iters / 5); }

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size();
  return m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
}

bool ParseHarnessArgs(int argc, char** argv, const char* prog, HarnessArgs* out,
                      const std::function<void(cli::Flags&)>& more) {
  HarnessArgs a;
  cli::Flags f;
  f.Early("-h,--help", &a.help);
  f.Early("--version", &a.version);
  auto size = [](uint64_t* to) {
    return [=](const std::string& v) -> std::string {
      auto s = ParseSize(v);
      if (!s || *s == 0) return "expected a size like 4K or 64M";
      *to = *s;
      return "";
    };
  };
  f.Value("-b", size(&a.min_bytes));
  f.Value("-e", size(&a.max_bytes));
  f.Value("-f", [&a](const std::string& v) -> std::string {
    auto n = ParseInt(v);
    if (!n || *n < 2) return "expected an integer >= 2";
    a.factor = static_cast<uint64_t>(*n);
    return "";
  });
  f.Value("--coll",
          cli::OneOf(&a.coll, {"allreduce", "alltoall", "reduce", "gather", "scatter", "barrier", "sendrecv"}));
  f.Value("-a", cli::Text(&a.algo));
  f.Value("--csv", cli::Text(&a.csv));
  f.Value("--label", cli::Text(&a.label));
  if (more) more(f);
  Status s = f.Parse(argc, argv);
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", prog, s.message().c_str());
    return false;
  }
  if (a.help || a.version) {
    *out = a;
    return true;
  }
  if (a.min_bytes > a.max_bytes) {
    std::fprintf(stderr, "%s: -b is larger than -e\n", prog);
    return false;
  }
  *out = a;
  return true;
}

std::vector<uint64_t> HarnessSizes(const HarnessArgs& a) {
  std::vector<uint64_t> s;
  for (uint64_t b = a.min_bytes; b <= a.max_bytes; b *= a.factor) s.push_back(b / 4 * 4);
  return s;
}

void FillPattern(float* p, size_t count, int rank) {
  for (size_t i = 0; i < count; ++i) p[i] = static_cast<float>((i + static_cast<size_t>(rank)) % 17) - 8.0f;
}

size_t CountWrongSum(const float* p, size_t count, int ranks) {
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    float want = 0;
    for (int r = 0; r < ranks; ++r) want += static_cast<float>((i + static_cast<size_t>(r)) % 17) - 8.0f;
    wrong += p[i] != want;
  }
  return wrong;
}

CallShape ShapeOf(const std::string& coll, uint64_t bytes, int ranks) {
  CallShape s;
  const size_t elems = bytes / sizeof(float), n = static_cast<size_t>(ranks);
  if (coll == "allreduce" || coll == "reduce") {
    s.in = s.out = elems;
    s.bytes = elems * sizeof(float);
    return s;
  }
  s.per_rank = elems / n;
  s.bytes = s.per_rank * n * sizeof(float);
  s.in = coll == "gather" ? s.per_rank : s.per_rank * n;
  s.out = coll == "scatter" ? s.per_rank : s.per_rank * n;
  return s;
}

double BusFactor(const std::string& coll, int ranks) {
  if (coll == "allreduce") return 2.0 * (ranks - 1) / ranks;
  if (coll == "reduce") return 1.0;
  return static_cast<double>(ranks - 1) / ranks;
}

namespace {
// The element `i` of the block `src` sends to `dst`: small integers, exact in f32.
float Value(int src, int dst, size_t i) {
  return static_cast<float>((i + size_t(src) * 7 + size_t(dst) * 3) % 17) - 8.0f;
}
}  // namespace

void FillFor(const std::string& coll, const CallShape& s, int rank, int ranks, float* in) {
  if (coll == "allreduce" || coll == "reduce") return FillPattern(in, s.in, rank);
  if (coll == "gather") {
    for (size_t i = 0; i < s.in; ++i) in[i] = Value(rank, 0, i);
    return;
  }
  if (coll == "scatter" && rank != 0) return;  // only the root's input is read
  for (int p = 0; p < ranks; ++p)
    for (size_t i = 0; i < s.per_rank; ++i) in[size_t(p) * s.per_rank + i] = Value(rank, p, i);
}

size_t CountWrongFor(const std::string& coll, const CallShape& s, int rank, int ranks, const float* out) {
  if (coll == "allreduce") return CountWrongSum(out, s.out, ranks);
  if ((coll == "reduce" || coll == "gather") && rank != 0) return 0;
  if (coll == "reduce") return CountWrongSum(out, s.out, ranks);
  size_t wrong = 0;
  if (coll == "scatter") {
    for (size_t i = 0; i < s.out; ++i) wrong += out[i] != Value(0, rank, i);
    return wrong;
  }
  for (int p = 0; p < ranks; ++p)  // alltoall: block p from rank p; gather: block p is rank p's
    for (size_t i = 0; i < s.per_rank; ++i)
      wrong += out[size_t(p) * s.per_rank + i] != Value(p, coll == "gather" ? 0 : rank, i);
  return wrong;
}

void PrintHarnessRow(const char* system, const HarnessArgs& a, const char* algo, int ranks, const HarnessRow& r) {
  double algbw = r.time_us > 0 ? static_cast<double>(r.bytes) / (r.time_us * 1e3) : 0;
  std::printf("%s %s %s ranks %d bytes %llu iters %d time_us %.2f algbw %.3f busbw %.3f wrong %zu\n", system,
              a.coll.c_str(), algo, ranks, static_cast<unsigned long long>(r.bytes), r.iters, r.time_us, algbw,
              algbw * BusFactor(a.coll, ranks), r.wrong);
  std::fflush(stdout);
}

bool WriteHarnessCsv(const HarnessArgs& a, const char* algo, int ranks, bool in_place,
                     const std::vector<HarnessRow>& rows) {
  if (a.csv.empty()) return true;
  std::ofstream f(a.csv);
  f << "collective,algo,transport,dtype,op,ranks,bytes,in_place,iters,repeats,time_us,time_min_us,time_max_us,"
       "algbw_gbps,busbw_gbps,wrong\n";
  for (const HarnessRow& r : rows) {
    double algbw = r.time_us > 0 ? static_cast<double>(r.bytes) / (r.time_us * 1e3) : 0;
    char buf[512];
    const bool reduces = a.coll == "allreduce" || a.coll == "reduce";
    std::snprintf(buf, sizeof(buf), "%s,%s,%s,f32,%s,%d,%llu,%d,%d,1,%.3f,%.3f,%.3f,%.4f,%.4f,%zu\n", a.coll.c_str(),
                  algo, a.label.c_str(), reduces ? "sum" : "none", ranks, static_cast<unsigned long long>(r.bytes),
                  in_place ? 1 : 0, r.iters, r.time_us, r.time_us, r.time_us, algbw, algbw * BusFactor(a.coll, ranks),
                  r.wrong);
    f << buf;
  }
  return static_cast<bool>(f.flush());
}

}  // namespace hoop::perf
