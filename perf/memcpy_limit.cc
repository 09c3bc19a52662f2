// memcpy-limit: how fast one core copies memory on this machine - the ceiling any copy-based
// transport between processes on one host works against. Copies SIZE bytes between two
// buffers (both touched first) REPEATS times, and prints every run and the median in GB/s
// (bytes copied per second).
//   usage: memcpy-limit [SIZE_MB (default 256)] [REPEATS (default 5)]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "perf/limit_args.h"

int main(int argc, char** argv) {
  long long size_mb = 256, repeats_arg = 5;
  const int rc = hoop::perf::ParseLimitArgs(
      argc, argv, "memcpy-limit",
      "usage: memcpy-limit [SIZE_MB (default 256)] [REPEATS (default 5)] | --version\n"
      "Copies SIZE_MB MiB between two buffers REPEATS times; prints GB/s per run and the median.",
      {{"SIZE_MB", &size_mb, 1, 65536}, {"REPEATS", &repeats_arg, 1, 1000}});
  if (rc >= 0) return rc;
  const size_t mb = static_cast<size_t>(size_mb);
  const int repeats = static_cast<int>(repeats_arg);
  size_t bytes = mb << 20;
  std::vector<char> a(bytes, 1), b(bytes, 2);
  std::vector<double> rates;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rates.push_back(static_cast<double>(bytes) / s / 1e9);
    std::printf("memcpy-limit run %d: %.3f GB/s\n", r + 1, rates.back());
    std::swap(a, b);
  }
  std::sort(rates.begin(), rates.end());
  std::printf("memcpy-limit median %.3f GB/s (%zu MiB, %d runs)\n", rates[rates.size() / 2], mb, repeats);
  return 0;
}
