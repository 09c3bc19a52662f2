// kernel-bench: how fast each reduction kernel runs, next to the memory system's limits measured
// in the same run. Every kernel reads two arrays and writes a third, each larger than the
// last-level cache (64 MiB by default), so its rate is bytes moved (3 x the array) per second.
// The limits: one core's memcpy (2 streams), and the 3-stream limit, the best of two plain
// loops that move the same bytes with no arithmetic (an integer OR of two arrays, with plain and
// with non-temporal stores, the latter 16, 32 and 64 bytes wide where the CPU has them). Kernels run as the
// collectives call them: plain (the kernel
// alone) and streaming (for outputs beyond kStreamingBytes: the kernel's own non-temporal
// variant where it has one, else ReduceStreaming, reduced through L1 and streamed out), per
// instruction set this CPU runs.
// With --device cuda[:N] it measures the GPU kernels instead, against a device-to-device copy
// (kernel_bench_cuda.cc).
//   usage: kernel-bench [--mib 64] [--repeats 5] [--all-ops] [--device cpu|cuda[:N]]
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/kernels/reduce.h"
#include "collectives/testing/reference.h"
#include "common/cli.h"
#include "common/version.h"
#include "perf/kernel_bench_cuda.h"

using namespace hoop;

namespace {

template <class F>
double MedianSeconds(int repeats, F&& f) {
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// d = a | b over `bytes`, 16 bytes at a time, with plain or non-temporal stores.
void OrPlain(char* d, const char* a, const char* b, size_t bytes) {
  for (size_t i = 0; i < bytes; i += 16) {
    __m128i x = _mm_load_si128(reinterpret_cast<const __m128i*>(a + i));
    __m128i y = _mm_load_si128(reinterpret_cast<const __m128i*>(b + i));
    _mm_store_si128(reinterpret_cast<__m128i*>(d + i), _mm_or_si128(x, y));
  }
}
void OrStream(char* d, const char* a, const char* b, size_t bytes) {
  for (size_t i = 0; i < bytes; i += 16) {
    __m128i x = _mm_load_si128(reinterpret_cast<const __m128i*>(a + i));
    __m128i y = _mm_load_si128(reinterpret_cast<const __m128i*>(b + i));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), _mm_or_si128(x, y));
  }
  _mm_sfence();
}

// The same with the widest non-temporal stores the CPU has, so that the limit is never below what
// a kernel's own vector stores can reach.
__attribute__((target("avx2"))) void OrStream256(char* d, const char* a, const char* b, size_t bytes) {
  for (size_t i = 0; i < bytes; i += 32) {
    __m256i x = _mm256_load_si256(reinterpret_cast<const __m256i*>(a + i));
    __m256i y = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + i));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i), _mm256_or_si256(x, y));
  }
  _mm_sfence();
}
__attribute__((target("avx512f"))) void OrStream512(char* d, const char* a, const char* b, size_t bytes) {
  for (size_t i = 0; i < bytes; i += 64) {
    __m512i x = _mm512_load_si512(a + i);
    __m512i y = _mm512_load_si512(b + i);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i), _mm512_or_si512(x, y));
  }
  _mm_sfence();
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = 64;
  int repeats = 5;
  bool all_ops = false;
  int device = -1;  // -1: the CPU's kernels
  bool help = false, version = false;
  int mib_flag = static_cast<int>(mib);
  hoop::cli::Flags flags;
  flags.Early("-h,--help", &help);
  flags.Early("--version", &version);
  flags.Switch("--all-ops", &all_ops);
  flags.Value("--device", [&device](const std::string& v) -> std::string {
    if (v == "cpu")
      device = -1;
    else if (v == "cuda")
      device = 0;
    else if (v.rfind("cuda:", 0) == 0 && v.size() > 5 && v.size() < 9 &&
             v.find_first_not_of("0123456789", 5) == std::string::npos)
      device = std::atoi(v.c_str() + 5);
    else
      return "expected cpu, cuda or cuda:N";
    return "";
  });
  flags.Value("--mib", hoop::cli::Int(&mib_flag, 1, 65536));
  flags.Value("--repeats", hoop::cli::Int(&repeats, 1, 1000));
  if (hoop::Status s = flags.Parse(argc, argv); !s.ok()) {
    std::fprintf(stderr, "kernel-bench: %s\n(run 'kernel-bench --help' for usage)\n", s.message().c_str());
    return 2;
  }
  if (version) {
    std::printf("%s\n", hoop::VersionLine("kernel-bench").c_str());
    return 0;
  }
  if (help) {
    std::puts(
        "usage: kernel-bench [--mib 64] [--repeats 5] [--all-ops] [--device cpu|cuda[:N]] | --version\n"
        "Each reduction kernel (sum, or every op with --all-ops) over arrays of MIB MiB, per instruction\n"
        "set this CPU runs, plain and streaming, in GB/s of bytes moved (two reads, one write), next to\n"
        "memcpy and the 3-stream limit measured in the same run; medians of REPEATS runs.\n"
        "--device cuda[:N]: the GPU kernels on device N (default 0) instead, next to a device-to-device\n"
        "copy of the same array timed alternately with each kernel; exits 1 where there is no device.");
    return 0;
  }
  mib = static_cast<size_t>(mib_flag);
  if (device >= 0) return RunDeviceKernelBench(device, mib, repeats, all_ops);
  const size_t bytes = mib << 20;
  // 64-byte aligned, touched once so no page fault lands in a timed run.
  auto alloc = [&] {
    char* p = static_cast<char*>(std::aligned_alloc(64, bytes));
    std::memset(p, 0x11, bytes);
    return p;
  };
  char *a = alloc(), *b = alloc(), *d = alloc();
  auto rate = [&](double s, int streams) { return static_cast<double>(bytes) * streams / s / 1e9; };

  // The limits are measured before and after the kernels; the higher figure counts, so a slow
  // moment of the machine can only make the kernels look worse.
  double memcpy_gbs = 0, or_plain = 0, or_stream = 0;
  const bool avx2 = __builtin_cpu_supports("avx2"), avx512 = __builtin_cpu_supports("avx512f");
  auto limits = [&] {
    memcpy_gbs = std::max(memcpy_gbs, rate(MedianSeconds(repeats, [&] { std::memcpy(d, a, bytes); }), 2));
    or_plain = std::max(or_plain, rate(MedianSeconds(repeats, [&] { OrPlain(d, a, b, bytes); }), 3));
    or_stream = std::max(or_stream, rate(MedianSeconds(repeats, [&] { OrStream(d, a, b, bytes); }), 3));
    if (avx2) or_stream = std::max(or_stream, rate(MedianSeconds(repeats, [&] { OrStream256(d, a, b, bytes); }), 3));
    if (avx512) or_stream = std::max(or_stream, rate(MedianSeconds(repeats, [&] { OrStream512(d, a, b, bytes); }), 3));
  };
  limits();
  std::printf("# kernel-bench: arrays of %zu MiB, median of %d runs, GB/s of bytes moved; best kernels: %s\n", mib,
              repeats, KernelIsaName(BestKernelIsa()));

  struct Result {
    DType dt;
    ReduceOp op;
    KernelIsa isa;
    double plain, stream, paired;  // paired: streaming / the widest streaming OR, timed alternately
  };
  std::vector<Result> rows;
  auto widest = avx512 ? &OrStream512 : avx2 ? &OrStream256 : &OrStream;
  std::vector<ReduceOp> ops = {ReduceOp::kSum};
  if (all_ops) ops.assign(std::begin(kAllReduceOps), std::end(kAllReduceOps));
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI32, DType::kI64, DType::kU8,
                   DType::kF8E4M3, DType::kF8E5M2}) {
    const size_t es = DTypeSize(dt), n = bytes / es;
    for (ReduceOp op : ops) {
      // The test suite's data: small integers, exact in every dtype, never subnormal.
      FillInput(dt, op, a, n, 1);
      FillInput(dt, op, b, n, 2);
      for (KernelIsa isa : {KernelIsa::kGeneric, KernelIsa::kAvx2, KernelIsa::kAvx512}) {
        ReduceFn fn = LookupReduceIsa(isa, dt, op);
        if (!fn) continue;
        double plain = rate(MedianSeconds(repeats, [&] { fn(d, a, b, n, 1); }), 3);
        ReduceFn direct = LookupStreamIsa(isa, dt, op);
        auto streaming = [&] {
          if (direct)
            direct(d, a, b, n, 1);
          else
            ReduceStreaming(fn, es, d, a, b, n, 1);
        };
        // The machine's speed drifts; timing the kernel and the limit alternately, run for run,
        // gives a ratio that drift does not move.
        std::vector<double> tk, tl;
        for (int r = 0; r < repeats; ++r) {
          tl.push_back(MedianSeconds(1, [&] { widest(d, a, b, bytes); }));
          tk.push_back(MedianSeconds(1, streaming));
        }
        std::sort(tk.begin(), tk.end());
        std::sort(tl.begin(), tl.end());
        const double stream = rate(tk[tk.size() / 2], 3);
        rows.push_back({dt, op, isa, plain, stream, tl[tl.size() / 2] / tk[tk.size() / 2]});
      }
    }
  }
  limits();
  const double limit = std::max(or_plain, or_stream);
  std::printf("# memcpy (2 streams): %.2f GB/s\n", memcpy_gbs);
  std::printf(
      "# 3-stream limit: %.2f GB/s (OR of two arrays: plain stores %.2f, non-temporal %.2f (the best of\n"
      "# 16-, 32- and 64-byte stores the CPU has); the better of a run before and one after the kernels)\n",
      limit, or_plain, or_stream);
  std::printf("# paired: streaming / the %s OR timed alternately with it, run for run (median over runs)\n",
              avx512 ? "64-byte streaming"
              : avx2 ? "32-byte streaming"
                     : "16-byte streaming");
  std::printf("# %6s %5s %8s %10s %10s %10s %10s\n", "dtype", "op", "isa", "plain", "streaming", "best/limit",
              "paired");
  for (const Result& r : rows)
    std::printf("  %6s %5s %8s %10.2f %10.2f %10.2f %10.2f\n", DTypeName(r.dt), ReduceOpName(r.op),
                KernelIsaName(r.isa), r.plain, r.stream, std::max(r.plain, r.stream) / limit, r.paired);
  std::free(a);
  std::free(b);
  std::free(d);
  return 0;
}
