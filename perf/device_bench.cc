// hoop-bench-device (device_bench.h says what it measures): parses the sizes, runs every case
// on the CPU and, where there is one, the GPU, checks that both computed the same thing, and
// prints the table (and writes --csv for perf/train-plot device, which draws the PNG).
#include "perf/device_bench.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "common/cli.h"
#include "common/parse.h"
#include "common/version.h"
#include "trainer/layer_factory.h"
#include "trainer/layout.h"
#include "trainer/parallel.h"

namespace hoop::bench {
namespace {

using Clock = std::chrono::steady_clock;

const char* kUsage =
    "usage: hoop-bench-device [--gemm SIZES] [--conv IMAGES] [--repeats N] [--threads N] [--cpu-only]\n"
    "                         [--csv FILE]\n"
    "\n"
    "The CPU-against-GPU timing study: square float matrix products (OpenBLAS against cuBLAS) of\n"
    "each size in --gemm, and one training step (forward, backward, SGD update) of a convolution\n"
    "layer of 32 filters of 8x8 over each number in --conv of random 128x128 images (the trainer's\n"
    "convolution, on oneDNN where built with it, against cuDNN). Each case runs once to warm up,\n"
    "then --repeats times; the table gives the mean times and the GPU/CPU speed-up. Without a GPU\n"
    "(or with --cpu-only) the CPU columns only, and the GPU's reason.\n"
    "  --gemm SIZES     comma-separated (default 50,100,500,1000,2000,5000,7000,10000; 0: none)\n"
    "  --conv IMAGES    comma-separated (default 20,40,60,80,100,200; 0: none)\n"
    "  --repeats N      timed runs per case (default 10)\n"
    "  --threads N      CPU threads (default: all cores, here %u)\n"
    "  --cpu-only       leave the GPU out even where there is one\n"
    "  --csv FILE       every case: kind,size,repeats,cpu_s,gpu_s,speedup (perf/train-plot device\n"
    "                   FILE --out device.png draws it)\n"
    "  --version        hoop-bench-device's version\n"
    "  -h, --help       this text\n";

struct Options {
  std::vector<int> gemm{50, 100, 500, 1000, 2000, 5000, 7000, 10000};
  std::vector<int> conv{20, 40, 60, 80, 100, 200};
  int repeats = 10, threads = 0;
  bool cpu_only = false, help = false, version = false;
  std::string csv;
};

StatusOr<std::vector<int>> ParseList(const std::string& flag, const std::string& text, int most) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    auto v = ParseInt(item);
    if (!v || *v < 0 || *v > most)
      return InvalidArgument(flag + " '" + text + "': '" + item + "' is not an integer in [0, " + std::to_string(most) +
                             "]");
    if (*v > 0) out.push_back(static_cast<int>(*v));
  }
  return out;
}

StatusOr<Options> Parse(int argc, char** argv) {
  Options o;
  cli::Flags f;
  f.Early("-h,--help", &o.help);
  f.Early("--version", &o.version);
  f.Switch("--cpu-only", &o.cpu_only);
  f.Value("--gemm", [&o](const std::string& flag, const std::string& v) -> Status {
    HOOP_ASSIGN_OR_RETURN(o.gemm, ParseList(flag, v, 20000));
    return Status::Ok();
  });
  f.Value("--conv", [&o](const std::string& flag, const std::string& v) -> Status {
    HOOP_ASSIGN_OR_RETURN(o.conv, ParseList(flag, v, 4096));
    return Status::Ok();
  });
  f.Value("--csv", cli::Text(&o.csv));
  f.Value("--repeats", cli::Int(&o.repeats, 1, 1000));
  f.Value("--threads", cli::Int(&o.threads, 1, 1000));
  HOOP_RETURN_IF_ERROR(f.Parse(argc, argv));
  if (o.threads == 0) o.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return o;
}

void Fill(std::vector<float>& v, size_t n, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  v.resize(n);
  for (float& x : v) x = d(rng);
}

// Largest |a - b| relative to the largest |a|: how far two computations of the same thing differ.
double Gap(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::abs(a[i])));
  }
  return diff / scale;
}

template <class F>
double MeanSeconds(int repeats, F&& f) {
  f();  // warm-up
  double total = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto t = Clock::now();
    f();
    total += std::chrono::duration<double>(Clock::now() - t).count();
  }
  return total / repeats;
}

double CpuGemm(int n, int repeats, const std::vector<float>& a, const std::vector<float>& b, std::vector<float>& c) {
  c.assign(static_cast<size_t>(n) * n, 0.0f);
  return MeanSeconds(repeats, [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  });
}

// The trainer's convolution layer, one step from the same start each time.
double CpuConv(ConvStep& s, int repeats, int threads) {
  using namespace hoop::train;
  std::mt19937 rng(1);
  auto layer = MakeLayerFactory(HaveOneDnn() ? Layers::kOneDnn : Layers::kNative)
                   ->Conv("conv", ConvSpec{1, kFilters, kKernel, 1, 0, true}, rng);
  ThreadPool pool(threads);
  Tensor x({s.n, 1, kImage, kImage}), y, dy, dx;
  x.data = s.x;
  const int out = kImage - kKernel + 1;
  Param* w = layer->Params()[0];
  Param* b = layer->Params()[1];
  auto step = [&] {
    w->value.data = s.w;
    b->value.data = s.b;
    layer->Forward(x, y, Mode::kTrain, pool);
    Tensor plain({s.n, kFilters, out, out});
    plain.data = s.dy;
    Relayout(plain, y.block, dy);  // the gradient in the layout the layer wrote y in
    layer->Backward(x, y, dy, nullptr, pool);
    for (size_t i = 0; i < w->value.size(); ++i) w->value.data[i] -= kLr * w->grad.data[i];
    for (size_t i = 0; i < b->value.size(); ++i) b->value.data[i] -= kLr * b->grad.data[i];
  };
  const double t = MeanSeconds(repeats, step);
  Tensor plain_y;
  Relayout(y, 0, plain_y);
  s.y = plain_y.data;
  s.w = w->value.data;
  s.b = b->value.data;
  return t;
}

struct Row {
  std::string kind;
  int size = 0;
  double cpu_s = 0, gpu_s = -1;  // gpu_s < 0: not run
};

int Main(int argc, char** argv) {
  auto opts = Parse(argc, argv);
  if (!opts.ok()) {
    std::fprintf(stderr, "hoop-bench-device: %s\n(run 'hoop-bench-device --help' for usage)\n",
                 opts.status().message().c_str());
    return 2;
  }
  if (opts->version) {
    std::printf("%s\n", VersionLine("hoop-bench-device").c_str());
    return 0;
  }
  if (opts->help) {
    std::printf(kUsage, std::max(1u, std::thread::hardware_concurrency()));
    return 0;
  }
  const Options& o = *opts;
  openblas_set_num_threads(o.threads);
  train::SetOneDnnThreads(o.threads);
  std::string why = "--cpu-only";
  std::unique_ptr<GpuBench> gpu = o.cpu_only ? nullptr : OpenGpu(&why);
  std::printf("hoop-bench-device: CPU: OpenBLAS sgemm and the trainer's convolution (%s), %d thread(s); GPU: %s\n",
              train::HaveOneDnn() ? "oneDNN" : "hand-written", o.threads,
              gpu ? gpu->Describe().c_str() : ("none (" + why + ")").c_str());
  std::printf("each case: 1 warm-up run, then the mean of %d\n\n", o.repeats);
  std::printf("| case | n | CPU mean s | GPU mean s | GPU/CPU speed-up |\n|---|---|---|---|---|\n");
  std::fflush(stdout);
  std::vector<Row> rows;
  std::mt19937 rng(7);
  auto print = [&](const Row& r) {
    char gpu_s[32] = "n/a", speedup[32] = "n/a";
    if (r.gpu_s >= 0) {
      std::snprintf(gpu_s, sizeof gpu_s, "%.4g", r.gpu_s);
      std::snprintf(speedup, sizeof speedup, "%.2f", r.cpu_s / r.gpu_s);
    }
    std::printf("| %s | %d | %.4g | %s | %s |\n", r.kind == "gemm" ? "matrix product n x n" : "conv training, n images",
                r.size, r.cpu_s, gpu_s, speedup);
    std::fflush(stdout);
  };
  for (int n : o.gemm) {
    std::vector<float> a, b, c, gc;
    Fill(a, static_cast<size_t>(n) * n, rng);
    Fill(b, static_cast<size_t>(n) * n, rng);
    Row r{"gemm", n, CpuGemm(n, o.repeats, a, b, c)};
    if (gpu) {
      auto t = gpu->Gemm(n, o.repeats, a, b, gc);
      if (!t.ok()) {
        std::fprintf(stderr, "hoop-bench-device: GPU gemm %d: %s\n", n, t.status().message().c_str());
        return 1;
      }
      if (double g = Gap(c, gc); g > 1e-3) {
        std::fprintf(stderr,
                     "hoop-bench-device: gemm %d: the GPU's product differs from the CPU's by %.3g (relative)\n", n, g);
        return 1;
      }
      r.gpu_s = *t;
    }
    rows.push_back(r);
    print(r);
  }
  for (int n : o.conv) {
    const int out = kImage - kKernel + 1;
    ConvStep cpu;
    cpu.n = n;
    Fill(cpu.x, static_cast<size_t>(n) * kImage * kImage, rng);
    Fill(cpu.dy, static_cast<size_t>(n) * kFilters * out * out, rng);
    Fill(cpu.w, kFilters * kKernel * kKernel, rng);
    Fill(cpu.b, kFilters, rng);
    ConvStep dev = cpu;
    Row r{"conv", n, CpuConv(cpu, o.repeats, o.threads)};
    if (gpu) {
      auto t = gpu->ConvTrain(dev, o.repeats);
      if (!t.ok()) {
        std::fprintf(stderr, "hoop-bench-device: GPU conv %d: %s\n", n, t.status().message().c_str());
        return 1;
      }
      for (auto [name, g] : {std::pair{"output", Gap(cpu.y, dev.y)},
                             {"updated weights", Gap(cpu.w, dev.w)},
                             {"updated bias", Gap(cpu.b, dev.b)}})
        if (g > 1e-3) {
          std::fprintf(stderr, "hoop-bench-device: conv %d: the GPU's %s differ from the CPU's by %.3g (relative)\n", n,
                       name, g);
          return 1;
        }
      r.gpu_s = *t;
    }
    rows.push_back(r);
    print(r);
  }
  if (!o.csv.empty()) {
    std::ofstream f(o.csv);
    f << "kind,size,repeats,cpu_s,gpu_s,speedup\n";
    for (const Row& r : rows) {
      f << r.kind << ',' << r.size << ',' << o.repeats << ',' << r.cpu_s << ',';
      if (r.gpu_s >= 0)
        f << r.gpu_s << ',' << r.cpu_s / r.gpu_s;
      else
        f << ',';
      f << '\n';
    }
    if (!f.good()) {
      std::fprintf(stderr, "hoop-bench-device: cannot write %s\n", o.csv.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace hoop::bench

int main(int argc, char** argv) { return hoop::bench::Main(argc, argv); }
