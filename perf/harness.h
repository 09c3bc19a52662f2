// What perf/compare's peer harnesses (mpi-allreduce: OpenMPI's MPI_Allreduce; gloo-allreduce:
// Gloo's ring, chunked ring and halving-doubling) share with hoop-perf, so every system is timed
// the same way: the same sizes, the same iteration rule (AutoIters), warm-up, one timed loop
// between barriers reported as the slowest rank's mean, one checked call, and rows written in
// hoop-perf's CSV schema. Only f32 sum is measured: every peer has it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hoop::perf {

// Iterations when none are given: enough calls to move about 256 MiB, at least 5 and at most
// 1000 (1000 up to 256 KiB, 16 at 16 MiB, 5 from 64 MiB); warm-up a fifth of that, at least 1.
// A size whose first call (the probe: the slowest rank's, so every rank agrees) took so long
// that the loop would run past 2 s gets fewer, but never fewer than 5: a slow link, or a peer's
// pathological size, must not stall a whole sweep.
int AutoIters(uint64_t bytes);
int AutoIters(uint64_t bytes, double probe_us);
int AutoWarmup(int iters);

struct HarnessArgs {
  uint64_t min_bytes = 4096, max_bytes = 64 << 20, factor = 4;
  std::string algo;  // gloo-allreduce: ring | ring_chunked | halving_doubling
  std::string csv;   // write the rows here (rank 0)
  std::string label; // the transport column, e.g. "vader" or "tcp"
  bool help = false;
};

// -b MIN -e MAX -f FACTOR [-a ALGO] [--csv FILE] [--label L] [-h]; on a bad argument prints
// "PROG: ..." to stderr and returns false.
bool ParseHarnessArgs(int argc, char** argv, const char* prog, HarnessArgs* out);
std::vector<uint64_t> HarnessSizes(const HarnessArgs& a);

// Rank-specific f32 input whose sum over ranks is exact, and the count of elements of a result
// that differ from that sum.
void FillPattern(float* p, size_t count, int rank);
size_t CountWrongSum(const float* p, size_t count, int ranks);

struct HarnessRow {
  uint64_t bytes;
  int iters;
  double time_us;  // slowest rank's mean per call
  size_t wrong;
};

// Rank 0: one table line per row on stdout, and the CSV file if asked for. Returns false when
// the file cannot be written.
void PrintHarnessRow(const char* system, const char* algo, int ranks, const HarnessRow& r);
bool WriteHarnessCsv(const HarnessArgs& a, const char* algo, int ranks, bool in_place,
                     const std::vector<HarnessRow>& rows);

}  // namespace hoop::perf
