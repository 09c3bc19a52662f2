// What perf/compare's peer harnesses (mpi-collective: OpenMPI's MPI_Allreduce, MPI_Alltoall,
// MPI_Reduce, MPI_Gather, MPI_Scatter; gloo-allreduce: Gloo's ring, chunked ring and
// halving-doubling allreduce) share with hoop-perf, so every system is timed the same way: the
// same sizes, the same iteration rule (AutoIters), warm-up, one timed loop between barriers
// reported as the slowest rank's mean, one checked call, rows written in hoop-perf's CSV schema
// with hoop-perf's (nccl-tests') busbw factors. Only f32 (sum where it reduces) is measured:
// every peer has it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/cli.h"

namespace hoop::perf {

// Iterations when none are given: enough calls to move about 256 MiB, at least 5 and at most
// 1000 (1000 up to 256 KiB, 16 at 16 MiB, 5 from 64 MiB); warm-up a fifth of that, at least 1.
// A size whose first call (the probe: the slowest rank's, so every rank agrees) took so long
// that the loop would run past 2 s gets fewer, but never fewer than 5: a slow link, or a peer's
// pathological size, must not stall a whole sweep.
int AutoIters(uint64_t bytes);
int AutoIters(uint64_t bytes, double probe_us);
int AutoWarmup(int iters);
// The median (the mean of the middle two of an even count; 0 for none).
double Median(std::vector<double> v);

// Point-to-point (hoop-perf sendrecv, mpi-collective --coll sendrecv), as the OSU benchmarks
// measure it between ranks 0 and 1: latency is half a ping-pong's round trip (osu_latency);
// bandwidth is kBandwidthWindow sends in flight, then one 4-byte reply (osu_bw). Iterations:
// 10000 round trips up to 8 KiB and 1000 above (osu_latency's), fewer where that would move
// more than 1 GiB (at least 20); bandwidth windows: a tenth of that, at least 5.
inline constexpr int kBandwidthWindow = 64;
int PingPongIters(uint64_t bytes);
int BandwidthIters(uint64_t bytes);

struct HarnessArgs {
  uint64_t min_bytes = 4096, max_bytes = 64 << 20, factor = 4;
  std::string coll = "allreduce";  // --coll: allreduce, alltoall, reduce, gather, scatter (root 0), barrier, sendrecv
  std::string algo;                // gloo-allreduce: ring | ring_chunked | halving_doubling
  std::string csv;                 // write the rows here (rank 0)
  std::string label;               // the transport column, e.g. "vader" or "tcp"
  bool help = false;
  bool version = false;  // --version: the caller prints VersionLine and exits 0
};

// -b MIN -e MAX -f FACTOR [--coll NAME] [-a ALGO] [--csv FILE] [--label L] [-h] [--version]; on a bad
// argument prints "PROG: ..." to stderr and returns false.
// `more` declares a harness's own flags beside these (gloo-allreduce's --store, --host).
bool ParseHarnessArgs(int argc, char** argv, const char* prog, HarnessArgs* out,
                      const std::function<void(cli::Flags&)>& more = {});
std::vector<uint64_t> HarnessSizes(const HarnessArgs& a);

// Rank-specific f32 input whose sum over ranks is exact, and the count of elements of a result
// that differ from that sum.
void FillPattern(float* p, size_t count, int rank);
size_t CountWrongSum(const float* p, size_t count, int ranks);

// The buffers of one call of a.coll at `bytes` on `ranks` ranks, as hoop-perf lays them out:
// `per_rank` elements per block where the collective has blocks (alltoall, gather, scatter: the
// size is the whole block-divided buffer), `in`/`out` the element counts, `bytes` what the row
// reports (rounded down to whole blocks).
struct CallShape {
  size_t per_rank = 0, in = 0, out = 0;
  uint64_t bytes = 0;
};
CallShape ShapeOf(const std::string& coll, uint64_t bytes, int ranks);
// nccl-tests' busbw factor, as hoop-perf's: 2(n-1)/n allreduce, 1 reduce, (n-1)/n the others.
double BusFactor(const std::string& coll, int ranks);
// Input for `rank` and the count of wrong elements in its result (root 0 for the rooted ones;
// ranks that get no result count 0).
void FillFor(const std::string& coll, const CallShape& s, int rank, int ranks, float* in);
size_t CountWrongFor(const std::string& coll, const CallShape& s, int rank, int ranks, const float* out);

struct HarnessRow {
  uint64_t bytes;
  int iters;
  double time_us;  // slowest rank's mean per call
  size_t wrong;
};

// Rank 0: one table line per row on stdout, and the CSV file if asked for. Returns false when
// the file cannot be written.
void PrintHarnessRow(const char* system, const HarnessArgs& a, const char* algo, int ranks, const HarnessRow& r);
bool WriteHarnessCsv(const HarnessArgs& a, const char* algo, int ranks, bool in_place,
                     const std::vector<HarnessRow>& rows);

}  // namespace hoop::perf
