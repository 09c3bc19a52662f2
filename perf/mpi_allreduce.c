/* mpi-allreduce: MPI_Allreduce (f32 sum, out of place) timed the way hoop-perf times hoop, for
 * side-by-side comparisons (perf/compare_mpi.sh).
 *   usage: mpirun -np N mpi-allreduce BYTES [ITERS (20)] [WARMUP (5)]
 * Prints one line: bytes, time per call in us (slowest rank's mean), algbw and busbw in GB/s. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: mpi-allreduce BYTES [ITERS] [WARMUP]\n");
    MPI_Finalize();
    return 2;
  }
  size_t bytes = strtoull(argv[1], NULL, 10);
  int iters = argc > 2 ? atoi(argv[2]) : 20, warmup = argc > 3 ? atoi(argv[3]) : 5;
  size_t count = bytes / sizeof(float);
  float* in = malloc(count * sizeof(float) + 1);
  float* out = malloc(count * sizeof(float) + 1);
  for (size_t i = 0; i < count; ++i) in[i] = (float)((i + (size_t)rank) % 17) - 8.0f;
  for (int i = 0; i < warmup; ++i) MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double us = (MPI_Wtime() - t0) * 1e6 / iters, slowest = 0;
  MPI_Allreduce(&us, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) {
    double algbw = (double)(count * sizeof(float)) / (slowest * 1e3);
    printf("mpi-allreduce bytes %zu time_us %.2f algbw %.3f busbw %.3f ranks %d\n", count * sizeof(float), slowest,
           algbw, algbw * 2.0 * (size - 1) / size, size);
  }
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
