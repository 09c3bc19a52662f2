/* hoop_comm_grow and hoop_init_join from C, including only <hoop/hoop.h>, as every rank of a job
 * (hooprun), and as the newcomers one of them starts.
 *
 *   hoop-c-grow-test add K    the job's ranks admit K newcomers (their rank 0 starts them)
 *   hoop-c-grow-test replace  the middle rank kills itself (SIGKILL; run under hooprun
 *                             --enable-recovery); the survivors shrink, and admit one newcomer in
 *                             its place, back to the job's size
 *   hoop-c-grow-test join     (a newcomer: hoop_init_join)
 *
 * Rank 0 of the communicator being grown starts the newcomers (fork, exec of this program with
 * "join", the job's store in its environment, no HOOP_RANK or HOOP_SIZE) and, at the end, waits
 * for them: they must exit 0. On the grown communicator every rank checks its number (the old
 * ranks keep theirs, newcomers follow), takes a broadcast from rank 0 (the state a newcomer needs,
 * here a step count) and checks allreduces against a reference. Prints "c-grow ok rank R of N"
 * (old ranks: "was R0 of N0"; newcomers: "newcomer"). Run with HOOP_TIMEOUT=60. */
#include <hoop/hoop.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int g_rank = -1;
#define CHECK_TAG "c-grow"
#define CHECK_RANK g_rank
#include "tests/launch/c_check.h"

static const int kStep = 4242;

/* On the grown communicator: the broadcast a newcomer needs, then allreduces of every size up
 * to 1001 against the reference (each rank adds its number times 1000 plus the index). */
static void Check(hoop_comm_t grown) {
  int rank = -1, size = -1;
  CHECK(hoop_rank(grown, &rank) == HOOP_SUCCESS && hoop_size(grown, &size) == HOOP_SUCCESS, "rank/size");
  int step = rank == 0 ? kStep : -1;
  CHECK(hoop_broadcast(grown, &step, &step, 1, HOOP_I32, 0) == HOOP_SUCCESS && step == kStep, "the broadcast: %d: %s",
        step, hoop_last_error());
  static int buf[1002];
  for (int n = 0; n <= 1001; n += n < 8 ? 1 : 331) {
    for (int i = 0; i < n; ++i) buf[i] = rank * 1000 + i;
    CHECK(hoop_allreduce(grown, buf, buf, (size_t)n, HOOP_I32, HOOP_SUM) == HOOP_SUCCESS, "allreduce of %d: %s", n,
          hoop_last_error());
    for (int i = 0; i < n; ++i) {
      const int want = 1000 * size * (size - 1) / 2 + size * i;
      CHECK(buf[i] == want, "allreduce of %d: element %d is %d, not %d", n, i, buf[i], want);
    }
  }
}

/* Starts `count` newcomers: this program with "join", without the job's rank and size. */
static void StartNewcomers(const char* self, int count, pid_t* pids) {
  for (int k = 0; k < count; ++k) {
    pids[k] = fork();
    CHECK(pids[k] >= 0, "fork");
    if (pids[k] == 0) {
      const char* drop[] = {"HOOP_RANK",       "HOOP_SIZE", "HOOP_LOCAL_RANK", "HOOP_LOCAL_SIZE", "HOOP_CROSS_RANK",
                            "HOOP_CROSS_SIZE", "RANK",      "WORLD_SIZE",      "LOCAL_RANK",      "LOCAL_WORLD_SIZE"};
      for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); ++i) unsetenv(drop[i]);
      execl(self, self, "join", (char*)NULL);
      _exit(127);
    }
  }
}

static void WaitNewcomers(int count, const pid_t* pids) {
  for (int k = 0; k < count; ++k) {
    int st = 0;
    CHECK(waitpid(pids[k], &st, 0) == pids[k] && WIFEXITED(st) && WEXITSTATUS(st) == 0, "newcomer %d ended with %d", k,
          st);
  }
}

static int Join(void) {
  hoop_comm_t grown = NULL;
  CHECK(hoop_init_join(&grown) == HOOP_SUCCESS, "hoop_init_join: %s", hoop_last_error());
  int rank = -1, size = -1;
  CHECK(hoop_rank(grown, &rank) == HOOP_SUCCESS && hoop_size(grown, &size) == HOOP_SUCCESS, "rank/size");
  g_rank = rank;
  Check(grown);
  printf("c-grow ok rank %d of %d, newcomer\n", rank, size);
  fflush(stdout);
  hoop_finalize(grown);
  return 0;
}

/* The survivors of a SIGKILL: an allreduce fails, then the shrink. */
static hoop_comm_t Survive(hoop_comm_t world, int victim) {
  if (g_rank == victim) {
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    raise(SIGKILL);
  }
  hoop_status_t s = HOOP_SUCCESS;
  for (int i = 0; i < 1000 && s == HOOP_SUCCESS; ++i) {
    int y = 1;
    s = hoop_allreduce(world, &y, &y, 1, HOOP_I32, HOOP_SUM);
  }
  CHECK(s != HOOP_SUCCESS, "no allreduce failed although rank %d died", victim);
  hoop_comm_t shrunk = NULL;
  CHECK(hoop_comm_shrink(world, &shrunk) == HOOP_SUCCESS, "shrink: %s", hoop_last_error());
  return shrunk;
}

int main(int argc, char** argv) {
  CheckUsage(argc, argv,
             "add K | replace | join\n  add: the job's ranks admit K newcomers; replace: the middle rank kills itself, "
             "the survivors\n  shrink and admit one in its place (hooprun --enable-recovery); join: a newcomer "
             "(started by the\n  program itself).");
  CHECK(argc >= 2, "usage: hoop-c-grow-test add K | replace | join");
  if (strcmp(argv[1], "join") == 0) return Join();
  hoop_comm_t world = NULL;
  CHECK(hoop_init_from_env(&world) == HOOP_SUCCESS, "init");
  int size = -1;
  CHECK(hoop_rank(world, &g_rank) == HOOP_SUCCESS && hoop_size(world, &size) == HOOP_SUCCESS, "rank/size");
  int x = 1;
  CHECK(hoop_allreduce(world, &x, &x, 1, HOOP_I32, HOOP_SUM) == HOOP_SUCCESS && x == size, "first allreduce");
  const int replace = strcmp(argv[1], "replace") == 0;
  const int count = replace ? 1 : (argc > 2 ? atoi(argv[2]) : 1);
  hoop_comm_t base = replace ? Survive(world, size / 2) : world;
  int rank = -1, n = -1;
  CHECK(hoop_rank(base, &rank) == HOOP_SUCCESS && hoop_size(base, &n) == HOOP_SUCCESS, "rank/size before the grow");
  pid_t pids[16];
  CHECK(count >= 1 && count <= 16, "count %d", count);
  if (rank == 0) StartNewcomers(argv[0], count, pids);

  hoop_comm_t grown = NULL;
  CHECK(hoop_comm_grow(base, count, &grown) == HOOP_SUCCESS, "grow: %s", hoop_last_error());
  int grown_rank = -1, grown_size = -1;
  CHECK(hoop_rank(grown, &grown_rank) == HOOP_SUCCESS && hoop_size(grown, &grown_size) == HOOP_SUCCESS, "rank/size");
  CHECK(grown_rank == rank && grown_size == n + count, "rank %d of %d after the grow, not %d of %d", grown_rank,
        grown_size, rank, n + count);
  hoop_comm_t none = NULL;
  CHECK(hoop_comm_grow(base, 0, &none) == HOOP_ERR_INVALID_ARGUMENT && none == NULL, "a grow of 0 is refused");
  Check(grown);
  printf("c-grow ok rank %d of %d, was %d of %d\n", grown_rank, grown_size, g_rank, size);
  fflush(stdout);
  hoop_comm_free(grown); /* before waiting for the newcomers, whose own finalize it takes part in */
  if (base != world) hoop_comm_free(base);
  hoop_finalize(world);
  if (rank == 0) WaitNewcomers(count, pids);
  return 0;
}
