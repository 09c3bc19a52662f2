/* Two communicators over one set of connections (a dup shares its parent's), each with its own
 * order of collectives on different ranks, as a Horovod-style fusion thread and the main thread
 * have them, or two PyTorch process groups: even ranks start an allreduce on the dup first (it
 * stays in flight), then one on the world; odd ranks run the world's first, then the dup's. A
 * message of the dup's that reaches an odd rank before it posted for it must not hold up the
 * world's behind it on the same link (each waits for the other: a hang until HOOP_TIMEOUT).
 * argv[1]: elements per allreduce (f32). Prints "c-views ok rank R of N". */
#include <hoop/hoop.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK_TAG "c-views"
#define CHECK_RANK g_rank
#include "tests/launch/c_check.h"

static int g_rank = -1;

static void Fill(float* v, size_t n, int rank, int salt) {
  for (size_t i = 0; i < n; ++i) v[i] = (float)((int)(i % 13) + rank * 3 + salt);
}

static void Expect(const float* v, size_t n, int size, int salt, const char* what) {
  for (size_t i = 0; i < n; ++i) {
    float want = 0;
    for (int r = 0; r < size; ++r) want += (float)((int)(i % 13) + r * 3 + salt);
    CHECK(v[i] == want, "%s: element %zu is %g, not %g", what, i, (double)v[i], (double)want);
  }
}

int main(int argc, char** argv) {
  CheckUsage(argc, argv,
             "[COUNT]\n  a communicator and its dup in opposite orders on even and odd ranks, allreduces of COUNT "
             "f32\n  elements (default 1); none may hold up the other. Run as every rank of a job (hooprun).");
  const size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 1;
  hoop_comm_t world = NULL, dup = NULL;
  int size = 0;
  CHECK(hoop_init_from_env(&world) == HOOP_SUCCESS, "init");
  CHECK(hoop_rank(world, &g_rank) == HOOP_SUCCESS && hoop_size(world, &size) == HOOP_SUCCESS, "rank");
  CHECK(hoop_comm_dup(world, &dup) == HOOP_SUCCESS, "dup");
  float* a = malloc(n * sizeof *a + 1);
  float* b = malloc(n * sizeof *b + 1);
  CHECK(a && b, "malloc");
  for (int round = 0; round < 3; ++round) {
    Fill(a, n, g_rank, round);
    Fill(b, n, g_rank, 100 + round);
    if (g_rank % 2 == 0) {
      hoop_request_t req;
      CHECK(hoop_iallreduce(dup, a, a, n, HOOP_F32, HOOP_SUM, &req) == HOOP_SUCCESS, "iallreduce on the dup");
      struct timespec t = {0, 50 * 1000 * 1000}; /* its first messages go out ahead of the world's */
      nanosleep(&t, NULL);
      CHECK(hoop_allreduce(world, b, b, n, HOOP_F32, HOOP_SUM) == HOOP_SUCCESS, "allreduce on the world");
      CHECK(hoop_wait(req) == HOOP_SUCCESS, "wait for the dup's");
    } else {
      CHECK(hoop_allreduce(world, b, b, n, HOOP_F32, HOOP_SUM) == HOOP_SUCCESS, "allreduce on the world");
      CHECK(hoop_allreduce(dup, a, a, n, HOOP_F32, HOOP_SUM) == HOOP_SUCCESS, "allreduce on the dup");
    }
    Expect(a, n, size, round, "the dup's");
    Expect(b, n, size, 100 + round, "the world's");
  }
  CHECK(hoop_comm_free(dup) == HOOP_SUCCESS, "free the dup");
  CHECK(hoop_finalize(world) == HOOP_SUCCESS, "finalize");
  printf("c-views ok rank %d of %d\n", g_rank, size);
  free(a);
  free(b);
  return 0;
}
