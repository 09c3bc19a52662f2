// mpi-collective: one of OpenMPI's collectives (MPI_Allreduce, MPI_Alltoall, MPI_Reduce,
// MPI_Gather, MPI_Scatter; f32, sum where it reduces, root 0, out of place) over a size sweep,
// timed and laid out the way hoop-perf times and lays out hoop's (harness.h), for perf/compare.
// The BTL is mpirun's choice: by default vader (shared memory) on one host, `--mca btl tcp,self`
// for TCP.
//   usage: mpirun -np N mpi-collective [--coll allreduce] [-b 4K] [-e 64M] [-f 4] [--csv FILE] [--label L]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "perf/harness.h"

using namespace hoop::perf;

namespace {

void Call(const std::string& coll, const CallShape& s, const float* in, float* out) {
  const int per = static_cast<int>(s.per_rank);
  if (coll == "allreduce") {
    MPI_Allreduce(in, out, static_cast<int>(s.in), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  } else if (coll == "reduce") {
    MPI_Reduce(in, out, static_cast<int>(s.in), MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
  } else if (coll == "alltoall") {
    MPI_Alltoall(in, per, MPI_FLOAT, out, per, MPI_FLOAT, MPI_COMM_WORLD);
  } else if (coll == "gather") {
    MPI_Gather(in, per, MPI_FLOAT, out, per, MPI_FLOAT, 0, MPI_COMM_WORLD);
  } else {
    MPI_Scatter(in, per, MPI_FLOAT, out, per, MPI_FLOAT, 0, MPI_COMM_WORLD);
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  HarnessArgs a;
  if (!ParseHarnessArgs(argc, argv, "mpi-collective", &a) || a.help) {
    if (rank == 0 && a.help)
      std::puts(
          "usage: mpirun -np N mpi-collective [--coll allreduce|alltoall|reduce|gather|scatter] [-b MIN] [-e MAX]\n"
          "       [-f FACTOR] [--csv FILE] [--label L]");
    MPI_Finalize();
    return a.help ? 0 : 2;
  }
  if (a.label.empty()) a.label = "mpi";
  std::vector<HarnessRow> rows;
  for (uint64_t want : HarnessSizes(a)) {
    CallShape s = ShapeOf(a.coll, want, size);
    if (s.bytes == 0) continue;  // smaller than one element per rank
    // One spare element each, so that no size hands MPI a null pointer.
    std::vector<float> in(s.in + 1), out(s.out + 1);
    FillFor(a.coll, s, rank, size, in.data());
    double p0 = MPI_Wtime(), probe = 0;
    Call(a.coll, s, in.data(), out.data());
    double probe_us = (MPI_Wtime() - p0) * 1e6;
    MPI_Allreduce(&probe_us, &probe, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int iters = AutoIters(s.bytes, probe), warmup = AutoWarmup(iters);
    for (int i = 0; i < warmup; ++i) Call(a.coll, s, in.data(), out.data());
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) Call(a.coll, s, in.data(), out.data());
    double us = (MPI_Wtime() - t0) * 1e6 / iters, slowest = 0;
    MPI_Allreduce(&us, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    std::fill(out.begin(), out.end(), -100.0f);
    Call(a.coll, s, in.data(), out.data());
    unsigned long long wrong = CountWrongFor(a.coll, s, rank, size, out.data()), total = 0;
    MPI_Allreduce(&wrong, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    rows.push_back({s.bytes, iters, slowest, static_cast<size_t>(total)});
    if (rank == 0) PrintHarnessRow("mpi-collective", a, "default", size, rows.back());
  }
  int rc = 0;
  if (rank == 0 && !WriteHarnessCsv(a, "default", size, false, rows)) {
    std::fprintf(stderr, "mpi-collective: cannot write %s\n", a.csv.c_str());
    rc = 1;
  }
  for (auto& r : rows) rc |= r.wrong ? 1 : 0;
  MPI_Finalize();
  return rc;
}
