/* A completed send is a promise: rank 0 posts K nonblocking sends to rank 1, waits for them all
 * (success), finalizes and exits; rank 1 starts receiving only 100 ms later and must get every
 * message, in order, with the right bytes. Blocking sends never lost anything; a barrier before
 * the finalize would hide the bugs this guards against: small sends complete once copied into
 * their frames, and frames still queued in the back end went with it at finalize (shm: all past
 * the ring's slots); a tcp close with unread input resets the connection, and the kernel drops
 * what it still held for the peer. argv[1]: K (default 1000); argv[2]: "small" (every message
 * 8 bytes, inside its frame) or "mixed" (16-22 bytes, every 97th 100 KB: rendezvous).
 * Mode "waitall" (argv[2]): K isends against K irecvs posted first, each side one
 * hoop_wait_all, timed: prints "c-finalize waitall K seconds S" (it must be linear in K).
 * Mode "left": sizes as "mixed" but the big ones 60,000 bytes (eager: no receive needed before
 * the sender's wait completes), and rank 1 first waits for a message rank 0 never sends (tag 6),
 * which fails once rank 0's exit is seen; every message rank 0 sent in full must still be
 * received after that.
 * Run as 2 ranks of a job (hooprun). Prints "c-finalize ok rank R of 2: K messages". */
#include <hoop/hoop.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK_TAG "c-finalize"
#define CHECK_RANK g_rank
#include "tests/launch/c_check.h"

static int g_rank = -1;

static int g_small; /* argv[2] "small": every message 8 bytes */
static int g_left;  /* argv[2] "left": receive after the sender's exit was seen */

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* K small messages each way of one pair, every request in one hoop_wait_all. */
static int WaitAll(hoop_comm_t comm, int k) {
  int64_t* vals = calloc((size_t)k, sizeof *vals);
  hoop_request_t* req = calloc((size_t)k, sizeof *req);
  CHECK(vals && req, "calloc");
  CHECK(hoop_barrier(comm) == HOOP_SUCCESS, "barrier");
  const double start = Now();
  for (int i = 0; i < k; ++i) {
    if (g_rank == 0) {
      vals[i] = i;
      CHECK(hoop_isend(comm, &vals[i], 1, HOOP_I64, 1, 3, &req[i]) == HOOP_SUCCESS, "isend %d", i);
    } else {
      CHECK(hoop_irecv(comm, &vals[i], 1, HOOP_I64, 0, 3, NULL, &req[i]) == HOOP_SUCCESS, "irecv %d", i);
    }
  }
  CHECK(hoop_wait_all(req, k) == HOOP_SUCCESS, "wait_all");
  const double took = Now() - start;
  for (int i = 0; i < k; ++i) CHECK(vals[i] == i, "message %d is %lld", i, (long long)vals[i]);
  CHECK(hoop_barrier(comm) == HOOP_SUCCESS, "barrier");
  printf("c-finalize waitall %d seconds %.3f rank %d\n", k, took, g_rank);
  CHECK(hoop_finalize(comm) == HOOP_SUCCESS, "finalize");
  printf("c-finalize ok rank %d of 2: %d messages\n", g_rank, k);
  free(vals);
  free(req);
  return 0;
}
static size_t Bytes(int i) {
  if (g_small) return 8;
  if (i % 97 == 96) return g_left ? 60000 : 100000;
  return 16 + (size_t)(i % 7);
}
static unsigned char Byte(int i, size_t j) { return (unsigned char)(i * 31 + j * 7 + 1); }

int main(int argc, char** argv) {
  CheckUsage(argc, argv,
             "[K] [small|mixed|waitall|left]\n  rank 0 sends K messages (default 1000), waits, finalizes and exits; "
             "rank 1 must receive them\n  all. Run as 2 ranks (hooprun -np 2).");
  const int k = argc > 1 ? atoi(argv[1]) : 1000;
  g_small = argc > 2 && strcmp(argv[2], "small") == 0;
  g_left = argc > 2 && strcmp(argv[2], "left") == 0;
  hoop_comm_t comm = NULL;
  int size = 0;
  CHECK(hoop_init_from_env(&comm) == HOOP_SUCCESS, "init");
  CHECK(hoop_rank(comm, &g_rank) == HOOP_SUCCESS && hoop_size(comm, &size) == HOOP_SUCCESS, "rank");
  CHECK(size == 2, "run me as 2 ranks, not %d", size);
  if (argc > 2 && strcmp(argv[2], "waitall") == 0) return WaitAll(comm, k);
  unsigned char* buf = malloc(100000);
  CHECK(buf, "malloc");
  if (g_rank == 0) {
    unsigned char** data = calloc((size_t)k, sizeof *data);
    hoop_request_t* req = calloc((size_t)k, sizeof *req);
    CHECK(data && req, "calloc");
    for (int i = 0; i < k; ++i) {
      data[i] = malloc(Bytes(i));
      CHECK(data[i], "malloc");
      for (size_t j = 0; j < Bytes(i); ++j) data[i][j] = Byte(i, j);
      CHECK(hoop_isend(comm, data[i], Bytes(i), HOOP_U8, 1, 5, &req[i]) == HOOP_SUCCESS, "isend %d", i);
    }
    CHECK(hoop_wait_all(req, k) == HOOP_SUCCESS, "wait_all");
    CHECK(hoop_finalize(comm) == HOOP_SUCCESS, "finalize");
    printf("c-finalize ok rank 0 of 2: %d messages\n", k);
    return 0;
  }
  struct timespec late = {0, 100 * 1000 * 1000};
  nanosleep(&late, NULL);
  if (g_left) {
    CHECK(hoop_recv(comm, buf, 1, HOOP_U8, 0, 6, NULL) != HOOP_SUCCESS, "a receive rank 0 never sent succeeded");
    printf("c-finalize rank 1: the receive rank 0 never sent failed, as it should\n");
  }
  for (int i = 0; i < k; ++i) {
    hoop_recv_info_t info;
    CHECK(hoop_recv(comm, buf, 100000, HOOP_U8, 0, 5, &info) == HOOP_SUCCESS, "receive %d of %d", i, k);
    CHECK(info.count == Bytes(i), "message %d: %zu bytes, not %zu", i, info.count, Bytes(i));
    for (size_t j = 0; j < Bytes(i); ++j) CHECK(buf[j] == Byte(i, j), "message %d byte %zu", i, j);
  }
  CHECK(hoop_finalize(comm) == HOOP_SUCCESS, "finalize");
  printf("c-finalize ok rank 1 of 2: %d messages\n", k);
  return 0;
}
