/* An elastic training loop in C under elastic hooprun (--min-np/--max-np), including only
 * <hoop/hoop.h>: what a program does to go on through lost ranks and take newcomers in.
 *
 *   hoop-c-elastic-test STEPS SIZE [kill R at S] [newcomers-die] [no-grow]
 *
 * Every step is an allreduce of 1 from each rank, checked (the sum is the communicator's size)
 * and added to a running total, the program's "model". Before each step the ranks ask how many
 * newcomers wait (hoop_comm_newcomers) and grow by that many; a newcomer (started by hooprun
 * with HOOP_JOIN=1: hoop_init_from_env joins) gets the step and the total from rank 0 by a
 * broadcast. A call that fails (a lost rank) is followed by shrinks until an allreduce works;
 * the step is then run again, so no step is lost or counted twice. The loop ends once STEPS
 * steps are done and the communicator has SIZE ranks again (at most 60 s). "kill R at S": job
 * rank R (HOOP_RANK) kills itself with SIGKILL after step S; "newcomers-die": a newcomer exits
 * with code 3 before it joins; "no-grow": the ranks never take newcomers in. Each rank ends with
 *   "c-elastic ok job rank J: step T, size N, total X, newcomer 0|1". */
#include <hoop/hoop.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_rank = -1;
#define CHECK_TAG "c-elastic"
#define CHECK_RANK g_rank
#include "tests/launch/c_check.h"

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The state a newcomer needs: the next step and the total so far. */
typedef struct {
  long long step, total;
} State;

/* Shrinks until an allreduce on the result works; frees the communicator it replaces. */
static hoop_comm_t Recover(hoop_comm_t comm) {
  for (int tries = 0;; ++tries) {
    CHECK(tries < 4, "%d shrinks and still no working communicator", tries);
    hoop_comm_t shrunk = NULL;
    CHECK(hoop_comm_shrink(comm, &shrunk) == HOOP_SUCCESS, "shrink");
    hoop_comm_free(comm);
    comm = shrunk;
    int one = 1, sum = 0;
    if (hoop_allreduce(comm, &one, &sum, 1, HOOP_I32, HOOP_SUM) == HOOP_SUCCESS) return comm;
  }
}

int main(int argc, char** argv) {
  CheckUsage(argc, argv,
             "STEPS SIZE [kill R at S] [newcomers-die] [no-grow]\n  an elastic loop of STEPS checked allreduces that "
             "ends with SIZE ranks. Run under elastic hooprun\n  (--min-np/--max-np).");
  const char* job_rank = getenv("HOOP_RANK");
  g_rank = job_rank ? atoi(job_rank) : -1;
  CHECK(argc >= 3, "usage: hoop-c-elastic-test STEPS SIZE [kill R at S] [newcomers-die] [no-grow]");
  const long long steps = atoll(argv[1]);
  const int want = atoi(argv[2]);
  int victim = -1, newcomers_die = 0, no_grow = 0;
  long long kill_at = -1;
  for (int i = 3; i < argc; ++i) {
    if (strcmp(argv[i], "kill") == 0 && i + 3 < argc) {
      victim = atoi(argv[i + 1]);
      kill_at = atoll(argv[i + 3]);
      i += 3;
    } else if (strcmp(argv[i], "newcomers-die") == 0) {
      newcomers_die = 1;
    } else if (strcmp(argv[i], "no-grow") == 0) {
      no_grow = 1;
    }
  }
  const char* join = getenv("HOOP_JOIN");
  const int newcomer = join && strcmp(join, "1") == 0;
  if (newcomer && newcomers_die) return 3;

  hoop_comm_t comm = NULL;
  CHECK(hoop_init_from_env(&comm) == HOOP_SUCCESS, "init");
  State st = {0, 0};
  if (newcomer) CHECK(hoop_broadcast(comm, &st, &st, 2, HOOP_I64, 0) == HOOP_SUCCESS, "the state, as a newcomer");
  const double start = Now();
  int size = 0;
  CHECK(hoop_size(comm, &size) == HOOP_SUCCESS, "size");
  while (st.step < steps || size != want) {
    CHECK(Now() - start < 60, "still at step %lld with %d ranks after 60 s", st.step, size);
    int waiting = 0;
    hoop_status_t s = hoop_comm_newcomers(comm, &waiting);
    if (s == HOOP_SUCCESS && waiting > 0 && !no_grow) {
      hoop_comm_t grown = NULL;
      CHECK(hoop_comm_grow(comm, waiting, &grown) == HOOP_SUCCESS, "grow by %d", waiting);
      hoop_comm_free(comm);
      comm = grown;
      CHECK(hoop_broadcast(comm, &st, &st, 2, HOOP_I64, 0) == HOOP_SUCCESS, "the state, to the newcomers");
      CHECK(hoop_size(comm, &size) == HOOP_SUCCESS, "size");
      continue;
    }
    int one = 1, sum = 0;
    if (s == HOOP_SUCCESS) s = hoop_allreduce(comm, &one, &sum, 1, HOOP_I32, HOOP_SUM);
    if (s != HOOP_SUCCESS) {
      CHECK(s == HOOP_ERR_UNAVAILABLE || s == HOOP_ERR_ABORTED, "a call failed with %d", (int)s);
      comm = Recover(comm);
      CHECK(hoop_size(comm, &size) == HOOP_SUCCESS, "size");
      continue; /* the step again, on the survivors */
    }
    CHECK(sum == size, "step %lld: the sum is %d on %d ranks", st.step, sum, size);
    st.total += sum;
    ++st.step;
    if (g_rank == victim && st.step == kill_at) raise(SIGKILL);
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  /* Every rank agrees on the total: the allreduce of each one's equals size times it. */
  long long mine = st.total, all = 0;
  CHECK(hoop_allreduce(comm, &mine, &all, 1, HOOP_I64, HOOP_SUM) == HOOP_SUCCESS, "the totals");
  CHECK(all == (long long)size * st.total, "the ranks' totals differ (%lld over %d ranks, %lld here)", all, size,
        st.total);
  printf("c-elastic ok job rank %d: step %lld, size %d, total %lld, newcomer %d\n", g_rank, st.step, size, st.total,
         newcomer);
  hoop_comm_free(comm);
  return 0;
}
