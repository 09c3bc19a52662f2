/* hoop_comm_shrink and hoop_comm_failed_ranks from C, including only <hoop/hoop.h>, as every
 * rank of a job (hooprun --enable-recovery, so the job goes on when a rank dies).
 *
 *   hoop-c-shrink-test VICTIM [INSIDE]
 *
 * VICTIM (a rank of the job; "last" for size - 1) kills itself with SIGKILL after a first
 * allreduce. INSIDE (optional, another rank) kills itself during the survivors' shrink, a few
 * milliseconds after entering it (a death inside the shrink). Every other rank: its next
 * allreduce fails (lost rank), it shrinks, and goes on: whenever an allreduce on the shrunk
 * communicator fails (INSIDE died after the new communicator was agreed), it shrinks that one,
 * until a checked allreduce succeeds. Then it checks the new communicator: its size (the ranks
 * that did not die), each rank's new number (its place among the survivors), hoop_comm_failed_ranks
 * on the first communicator naming VICTIM, and allreduces of every size up to 1001 elements
 * against a reference. Prints "c-shrink ok rank R of N -> R' of N'", the seconds from the
 * failed call to the first correct allreduce on the shrunk communicator ("recovered in") and
 * when that was ("at", CLOCK_MONOTONIC seconds); VICTIM prints when it killed itself ("killed
 * at"), which perf/shrink-time subtracts.
 * Run with HOOP_TIMEOUT=60: nothing may come near it. */
#include <hoop/hoop.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int g_rank = -1;
#define CHECK_TAG "c-shrink"
#define CHECK_RANK g_rank
#include "tests/launch/c_check.h"

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void* DieSoon(void* arg) {
  (void)arg;
  struct timespec pause = {0, (long)(2 + g_rank % 7) * 1000 * 1000};
  nanosleep(&pause, NULL);
  raise(SIGKILL);
  return NULL;
}

/* "stop": the victim stops itself (SIGSTOP) while the others are inside an allreduce, and a child
 * of its own continues it 15 s later. By then the others' call has timed out (HOOP_TIMEOUT, 4 s
 * in the test), and their shrink has waited HOOP_SHRINK_WAIT for it and gone on without it: its
 * own calls fail, and its shrink says it was left out. */
static int Stopped(hoop_comm_t world) {
  const pid_t me = getpid();
  if (fork() == 0) {
    sleep(15);
    kill(me, SIGCONT);
    _exit(0);
  }
  struct timespec pause = {0, 200 * 1000 * 1000};
  nanosleep(&pause, NULL);
  raise(SIGSTOP);
  /* Its first allreduce may even pass, where the others' contributions were sent before they
   * gave up (over shm, say): the sum is right. The next one fails. */
  hoop_status_t s = HOOP_SUCCESS;
  for (int i = 0; i < 100 && s == HOOP_SUCCESS; ++i) {
    int y = 1;
    s = hoop_allreduce(world, &y, &y, 1, HOOP_I32, HOOP_SUM);
  }
  CHECK(s != HOOP_SUCCESS, "100 allreduces passed after the stop, the others gone");
  hoop_comm_t shrunk = NULL;
  CHECK(hoop_comm_shrink(world, &shrunk) == HOOP_ERR_UNAVAILABLE && shrunk == NULL, "the stopped rank's shrink: %s",
        hoop_last_error());
  CHECK(strstr(hoop_last_error(), "left out") != NULL, "the shrink does not say it left this rank out: %s",
        hoop_last_error());
  printf("c-shrink left out rank %d\n", g_rank);
  fflush(stdout);
  hoop_finalize(world);
  wait(NULL);
  return 0;
}

static hoop_status_t Checked(hoop_comm_t comm, int n, const int* job_ranks, int size);

/* "exclude R": no one dies; rank R is left out by the others (hoop_comm_shrink_excluding), and
 * does not call it (it is refused if it does, naming itself among those excluded). */
static int Excluded(hoop_comm_t world, int size, int excluded) {
  hoop_comm_t shrunk = NULL;
  if (g_rank == excluded) {
    CHECK(hoop_comm_shrink_excluding(world, &excluded, 1, &shrunk) == HOOP_ERR_INVALID_ARGUMENT && !shrunk,
          "an excluded rank's own shrink was not refused");
    printf("c-shrink excluded rank %d\n", g_rank);
  } else {
    CHECK(hoop_comm_shrink_excluding(world, &excluded, 1, &shrunk) == HOOP_SUCCESS, "shrink: %s", hoop_last_error());
    int n = -1, me = -1, job_ranks[64];
    CHECK(hoop_size(shrunk, &n) == HOOP_SUCCESS && hoop_rank(shrunk, &me) == HOOP_SUCCESS, "rank/size");
    CHECK(n == size - 1 && me == g_rank - (g_rank > excluded), "rank %d of %d after leaving out rank %d", me, n,
          excluded);
    CHECK(hoop_allgather(shrunk, &g_rank, job_ranks, 1, HOOP_I32) == HOOP_SUCCESS, "allgather");
    CHECK(Checked(shrunk, 1001, job_ranks, n) == HOOP_SUCCESS, "allreduce: %s", hoop_last_error());
    printf("c-shrink ok rank %d of %d -> %d of %d, rank %d left out\n", g_rank, size, me, n, excluded);
    hoop_comm_free(shrunk);
  }
  fflush(stdout);
  hoop_finalize(world);
  return 0;
}

/* An allreduce of n ints on comm checked against the sum every rank's value makes: rank r of the
 * job (not of comm) adds r * 1000 + i, so a rank counted twice or missed shows. */
static hoop_status_t Checked(hoop_comm_t comm, int n, const int* job_ranks, int size) {
  int* buf = malloc(sizeof(int) * (size_t)(n ? n : 1));
  for (int i = 0; i < n; ++i) buf[i] = g_rank * 1000 + i;
  hoop_status_t s = hoop_allreduce(comm, buf, buf, (size_t)n, HOOP_I32, HOOP_SUM);
  for (int i = 0; s == HOOP_SUCCESS && i < n; ++i) {
    int want = 0;
    for (int k = 0; k < size; ++k) want += job_ranks[k] * 1000 + i;
    CHECK(buf[i] == want, "element %d of %d: %d, not %d", i, n, buf[i], want);
  }
  free(buf);
  return s;
}

int main(int argc, char** argv) {
  CheckUsage(argc, argv,
             "VICTIM [INSIDE] | stop [VICTIM] | exclude [RANK]\n  VICTIM (a rank, or last) kills itself after a first "
             "allreduce (INSIDE: another rank dies inside\n  the shrink); the others shrink and go on. Run as every "
             "rank of a job under\n  hooprun --enable-recovery, HOOP_TIMEOUT=60.");
  hoop_comm_t world = NULL;
  CHECK(hoop_init_from_env(&world) == HOOP_SUCCESS, "init");
  int size = -1;
  CHECK(hoop_rank(world, &g_rank) == HOOP_SUCCESS && hoop_size(world, &size) == HOOP_SUCCESS, "rank/size");
  CHECK(argc >= 2, "usage: hoop-c-shrink-test VICTIM [INSIDE] | stop [VICTIM] | exclude [RANK]");
  const int stop = strcmp(argv[1], "stop") == 0, exclude = strcmp(argv[1], "exclude") == 0;
  const char* v = stop || exclude ? (argc > 2 ? argv[2] : "last") : argv[1];
  const int victim = strcmp(v, "last") == 0 ? size - 1 : atoi(v);
  const int inside = !stop && !exclude && argc > 2 ? (strcmp(argv[2], "last") == 0 ? size - 1 : atoi(argv[2])) : -1;
  int x = 1;
  CHECK(hoop_allreduce(world, &x, &x, 1, HOOP_I32, HOOP_SUM) == HOOP_SUCCESS && x == size, "first allreduce");
  if (stop && g_rank == victim) return Stopped(world);
  if (strcmp(argv[1], "exclude") == 0) return Excluded(world, size, victim);
  if (g_rank == victim) { /* after the others are inside their next allreduce, waiting for it */
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    printf("c-shrink rank %d killed at %.6f\n", g_rank, Now()); /* CLOCK_MONOTONIC: one per machine */
    fflush(stdout);
    raise(SIGKILL);
  }

  /* Until the loss shows: the victim is gone, so an allreduce fails soon. */
  double failed_at = 0;
  for (int i = 0; i < 1000 && !failed_at; ++i) {
    int y = 1;
    hoop_status_t s = hoop_allreduce(world, &y, &y, 1, HOOP_I32, HOOP_SUM);
    if (s != HOOP_SUCCESS) failed_at = Now();
    CHECK(s == HOOP_SUCCESS || s == HOOP_ERR_UNAVAILABLE || s == HOOP_ERR_ABORTED || (stop && s == HOOP_ERR_TIMEOUT),
          "allreduce failed with %d: %s", (int)s, hoop_last_error());
  }
  CHECK(failed_at > 0, "no allreduce failed although rank %d died", victim);

  if (g_rank == inside) {
    pthread_t t;
    pthread_create(&t, NULL, DieSoon, NULL);
  }
  /* Shrink until an allreduce on the result works (a death inside the shrink may need two). */
  int job_ranks[64];
  hoop_comm_t comm = world, shrunk = NULL;
  int n = 0, me = -1, shrinks = 0;
  for (;;) {
    hoop_status_t s = hoop_comm_shrink(comm, &shrunk);
    while (g_rank == inside) pause(); /* dies within milliseconds, whatever the shrink did */
    CHECK(s == HOOP_SUCCESS, "shrink %d: %s", shrinks, hoop_last_error());
    ++shrinks;
    CHECK(hoop_size(shrunk, &n) == HOOP_SUCCESS && hoop_rank(shrunk, &me) == HOOP_SUCCESS, "new rank/size");
    /* Which job ranks the members are: an allgather of each one's. */
    CHECK(n <= 64, "size %d", n);
    s = hoop_allgather(shrunk, &g_rank, job_ranks, 1, HOOP_I32);
    if (s == HOOP_SUCCESS) s = Checked(shrunk, 1, job_ranks, n);
    if (s == HOOP_SUCCESS) break;
    CHECK(shrinks < 4, "%d shrinks and still no working communicator: %s", shrinks, hoop_last_error());
    if (comm != world) hoop_comm_free(comm);
    comm = shrunk;
  }
  const double recovered_at = Now(), recovered = recovered_at - failed_at;
  if (comm != world) hoop_comm_free(comm);

  int expect = size - 1 - (inside >= 0 && inside != victim ? 1 : 0);
  CHECK(n == expect, "the shrunk communicator has %d ranks, not %d", n, expect);
  int want_me = 0;
  for (int r = 0; r < g_rank; ++r) want_me += r != victim && r != inside;
  CHECK(me == want_me, "new rank %d, not %d (the survivors keep their order)", me, want_me);
  for (int k = 0; k < n; ++k) CHECK(job_ranks[k] != victim && job_ranks[k] != inside, "a dead rank is a member");

  int failed[64], count = -1;
  CHECK(hoop_comm_failed_ranks(world, failed, 64, &count) == HOOP_SUCCESS, "failed ranks: %s", hoop_last_error());
  int named = 0;
  for (int k = 0; k < count; ++k) named |= failed[k] == victim;
  CHECK(named != stop, "hoop_comm_failed_ranks (%d of them) %s rank %d", count, stop ? "names the stopped" : "misses",
        victim); /* a stopped process has not failed: it was left out after HOOP_SHRINK_WAIT */
  CHECK(hoop_comm_failed_ranks(world, NULL, 0, &count) == HOOP_SUCCESS && count >= !stop, "count only");
  CHECK(hoop_comm_failed_ranks(world, NULL, 1, &count) == HOOP_ERR_INVALID_ARGUMENT, "NULL ranks with capacity");
  CHECK(hoop_comm_shrink(world, NULL) == HOOP_ERR_INVALID_ARGUMENT, "shrink(NULL)");

  for (int c = 0; c <= 1001; c += (c < 8 ? 1 : 331))
    CHECK(Checked(shrunk, c, job_ranks, n) == HOOP_SUCCESS, "allreduce of %d on the shrunk: %s", c, hoop_last_error());
  CHECK(hoop_barrier(shrunk) == HOOP_SUCCESS, "barrier");
  printf("c-shrink ok rank %d of %d -> %d of %d, recovered in %.3f s after %d shrink%s, at %.6f\n", g_rank, size, me, n,
         recovered, shrinks, shrinks == 1 ? "" : "s", recovered_at);
  fflush(stdout);
  hoop_comm_free(shrunk);
  hoop_finalize(world);
  return 0;
}
