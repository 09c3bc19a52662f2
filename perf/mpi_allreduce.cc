// mpi-allreduce: OpenMPI's MPI_Allreduce (f32 sum, out of place) over a size sweep, timed the way
// hoop-perf times hoop (harness.h), for perf/compare. The BTL is mpirun's choice: by default
// vader (shared memory) on one host, `--mca btl tcp,self` for TCP.
//   usage: mpirun -np N mpi-allreduce [-b 4K] [-e 64M] [-f 4] [--csv FILE] [--label L]
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "perf/harness.h"

using namespace hoop::perf;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  HarnessArgs a;
  if (!ParseHarnessArgs(argc, argv, "mpi-allreduce", &a) || a.help) {
    if (rank == 0 && a.help) std::puts("usage: mpirun -np N mpi-allreduce [-b MIN] [-e MAX] [-f FACTOR] [--csv FILE]");
    MPI_Finalize();
    return a.help ? 0 : 2;
  }
  if (a.label.empty()) a.label = "mpi";
  std::vector<HarnessRow> rows;
  for (uint64_t bytes : HarnessSizes(a)) {
    size_t count = bytes / sizeof(float);
    std::vector<float> in(count + 1), out(count + 1);
    FillPattern(in.data(), count, rank);
    double p0 = MPI_Wtime(), probe = 0;
    MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double probe_us = (MPI_Wtime() - p0) * 1e6;
    MPI_Allreduce(&probe_us, &probe, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int iters = AutoIters(bytes, probe), warmup = AutoWarmup(iters);
    for (int i = 0; i < warmup; ++i)
      MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i)
      MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double us = (MPI_Wtime() - t0) * 1e6 / iters, slowest = 0;
    MPI_Allreduce(&us, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    std::fill(out.begin(), out.end(), -1.0f);
    MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    unsigned long long wrong = CountWrongSum(out.data(), count, size), total = 0;
    MPI_Allreduce(&wrong, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    rows.push_back({bytes, iters, slowest, static_cast<size_t>(total)});
    if (rank == 0) PrintHarnessRow("mpi-allreduce", "default", size, rows.back());
  }
  int rc = 0;
  if (rank == 0 && !WriteHarnessCsv(a, "default", size, false, rows)) {
    std::fprintf(stderr, "mpi-allreduce: cannot write %s\n", a.csv.c_str());
    rc = 1;
  }
  for (auto& r : rows) rc |= r.wrong ? 1 : 0;
  MPI_Finalize();
  return rc;
}
