/* hoop_comm_revoke from C, including only <hoop/hoop.h>, as every rank of a job (hooprun).
 *
 * The middle rank (size / 2) posts a receive nobody sends, waits 300 ms and revokes the job's
 * communicator. Every other rank is meanwhile inside an allreduce the revoking rank never joins:
 * it must fail with HOOP_ERR_REVOKED well before HOOP_TIMEOUT (run with 60 s), naming the rank
 * that revoked and its reason, and so must the revoking rank's pending receive. Then, on every
 * rank, later calls fail the same way on the communicator, on its duplicate and on a split of it
 * (they share its connections), a second revoke succeeds, and freeing them returns.
 * Prints "c-revoke ok rank R of N". */
#include <hoop/hoop.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int g_rank = -1;
#define CHECK_TAG "c-revoke"
#define CHECK_RANK g_rank
#include "tests/launch/c_check.h"

static const char kReason[] = "the test gives up on purpose";

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The last error names who revoked and why. */
static void CheckNamed(int revoker, const char* what) {
  char who[64];
  snprintf(who, sizeof(who), "rank %d revoked communicator", revoker);
  const char* e = hoop_last_error();
  CHECK(strstr(e, who) != NULL && strstr(e, kReason) != NULL, "%s: the error does not name rank %d and the reason",
        what, revoker);
}

int main(int argc, char** argv) {
  CheckUsage(argc, argv,
             "\n  (no arguments) hoop_comm_revoke from C: the middle rank revokes while the others are inside an\n  "
             "allreduce. Run as every rank of a job (hooprun -np N hoop-c-revoke-test), HOOP_TIMEOUT=60.");
  hoop_comm_t world = NULL, dup = NULL, half = NULL;
  CHECK(hoop_init_from_env(&world) == HOOP_SUCCESS, "init");
  int size = -1;
  CHECK(hoop_rank(world, &g_rank) == HOOP_SUCCESS && hoop_size(world, &size) == HOOP_SUCCESS, "rank/size");
  const int rank = g_rank, revoker = size / 2;
  CHECK(hoop_comm_dup(world, &dup) == HOOP_SUCCESS, "dup");
  CHECK(hoop_comm_split(world, rank % 2, rank, &half) == HOOP_SUCCESS, "split");
  int x = 1;
  CHECK(hoop_allreduce(world, &x, &x, 1, HOOP_I32, HOOP_SUM) == HOOP_SUCCESS && x == size, "first allreduce");

  if (rank == revoker) {
    hoop_request_t r = NULL;
    int never = 0;
    if (size > 1)
      CHECK(hoop_irecv(world, &never, 1, HOOP_I32, (rank + 1) % size, 77, NULL, &r) == HOOP_SUCCESS, "irecv");
    struct timespec pause = {0, 300 * 1000 * 1000};
    nanosleep(&pause, NULL);
    CHECK(hoop_comm_revoke(world, kReason) == HOOP_SUCCESS, "revoke");
    if (r) {
      CHECK(hoop_wait(r) == HOOP_ERR_REVOKED, "the pending receive did not fail as revoked");
      CheckNamed(revoker, "the pending receive");
    }
  } else {
    const double start = Now();
    int y = rank;
    hoop_status_t s = hoop_allreduce(world, &y, &y, 1, HOOP_I32, HOOP_SUM);
    const double waited = Now() - start;
    CHECK(s == HOOP_ERR_REVOKED, "the allreduce during the revoke returned %d", (int)s);
    CheckNamed(revoker, "the allreduce during the revoke");
    CHECK(waited < 10.0, "the allreduce took %.1f s to fail (HOOP_TIMEOUT is 60)", waited);
  }

  /* Later calls, on every rank. */
  int z = 0;
  CHECK(hoop_allreduce(world, &z, &z, 1, HOOP_I32, HOOP_SUM) == HOOP_ERR_REVOKED, "a later allreduce");
  CheckNamed(revoker, "a later allreduce");
  CHECK(hoop_barrier(dup) == HOOP_ERR_REVOKED, "a barrier on the duplicate");
  CHECK(hoop_broadcast(half, &z, &z, 1, HOOP_I32, 0) == HOOP_ERR_REVOKED, "a broadcast on the split");
  if (size > 1) CHECK(hoop_send(world, &z, 1, HOOP_I32, (rank + 1) % size, 5) == HOOP_ERR_REVOKED, "a later send");
  CHECK(strstr(hoop_status_string(HOOP_ERR_REVOKED), "revoked") != NULL, "status string");
  CHECK(hoop_comm_revoke(world, "again") == HOOP_SUCCESS, "a second revoke");
  CHECK(hoop_comm_revoke(NULL, "x") == HOOP_ERR_INVALID_ARGUMENT, "revoke(NULL)");

  const double start = Now();
  hoop_comm_free(half);
  hoop_comm_free(dup);
  hoop_finalize(world); /* a revoked communicator's end is an error; it must come promptly */
  CHECK(Now() - start < 20.0, "freeing the revoked communicators took %.1f s", Now() - start);
  printf("c-revoke ok rank %d of %d\n", rank, size);
  return 0;
}
