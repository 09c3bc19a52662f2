/* Sub-communicators from C, including only <hoop/hoop.h>: halves running different collectives
 * at the same time (allreduce in one, allgather in the other, then swapped), checked against a
 * reference at counts 0, 1, 7 and a large odd one; pairs ordered by a reversed key (broadcast in
 * some and allreduce in others at the same time, then point-to-point inside each pair); a dup whose messages never
 * meet the parent's; a split of a
 * split; HOOP_UNDEFINED; 300 dups made and freed (more than the 255 ids, so ids are reused);
 * bad calls (a negative color on one rank fails every rank; NULL newcomm; a freed handle).
 * Mode "missing": one rank calls a barrier where the others split: every rank gets an error,
 * none hangs. Run as every rank of a job (hooprun). Prints "c-split ok rank R of N". */
#include <hoop/hoop.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_TAG "c-split"
#define CHECK_RANK g_rank
#include "tests/launch/c_check.h"

static int g_rank = -1;
static const size_t kCounts[] = {0, 1, 7, 100001};

static int SizeOf(hoop_comm_t c) {
  int n = -1;
  CHECK(hoop_size(c, &n) == HOOP_SUCCESS, "size");
  return n;
}
static int RankOf(hoop_comm_t c) {
  int r = -1;
  CHECK(hoop_rank(c, &r) == HOOP_SUCCESS, "rank");
  return r;
}

/* Allreduce over a group (world ranks first..first+n-1): i32 sum, f64 sum, i64 max, i32 bor. */
static void GroupAllreduce(hoop_comm_t sub, int first, int n) {
  for (size_t c = 0; c < 4; ++c) {
    const size_t count = kCounts[c];
    int32_t* a = malloc(sizeof(int32_t) * (count + 1));
    double* d = malloc(sizeof(double) * (count + 1));
    int64_t* m = malloc(sizeof(int64_t) * (count + 1));
    int32_t* b = malloc(sizeof(int32_t) * (count + 1));
    for (size_t j = 0; j < count; ++j) {
      a[j] = (g_rank + 1) * (int32_t)(j % 13 + 1);
      d[j] = 0.5 * g_rank + (double)(j % 7);
      m[j] = (int64_t)((g_rank * 7919 + (int)j) % 1000);
      b[j] = 1 << ((g_rank + (int)j) % 31);
    }
    CHECK(hoop_allreduce(sub, a, a, count, HOOP_I32, HOOP_SUM) == HOOP_SUCCESS, "allreduce i32 %zu", count);
    CHECK(hoop_allreduce(sub, d, d, count, HOOP_F64, HOOP_SUM) == HOOP_SUCCESS, "allreduce f64 %zu", count);
    CHECK(hoop_allreduce(sub, m, m, count, HOOP_I64, HOOP_MAX) == HOOP_SUCCESS, "allreduce i64 %zu", count);
    CHECK(hoop_allreduce(sub, b, b, count, HOOP_I32, HOOP_BOR) == HOOP_SUCCESS, "allreduce bor %zu", count);
    for (size_t j = 0; j < count; ++j) {
      int32_t ea = 0, eb = 0;
      double ed = 0;
      int64_t em = -1;
      for (int r = first; r < first + n; ++r) {
        ea += (r + 1) * (int32_t)(j % 13 + 1);
        ed += 0.5 * r + (double)(j % 7);
        const int64_t v = (int64_t)((r * 7919 + (int)j) % 1000);
        if (v > em) em = v;
        eb |= 1 << ((r + (int)j) % 31);
      }
      CHECK(a[j] == ea && d[j] == ed && m[j] == em && b[j] == eb, "count %zu element %zu: %d %g %lld %d", count, j,
            a[j], d[j], (long long)m[j], b[j]);
    }
    free(a), free(d), free(m), free(b);
  }
}

/* Allgather over a group: block r holds world rank first+r's values. */
static void GroupAllgather(hoop_comm_t sub, int first, int n) {
  for (size_t c = 0; c < 4; ++c) {
    const size_t count = kCounts[c];
    int32_t* in = malloc(sizeof(int32_t) * (count + 1));
    int32_t* out = malloc(sizeof(int32_t) * (count * (size_t)n + 1));
    for (size_t j = 0; j < count; ++j) in[j] = g_rank * 1000003 + (int32_t)j;
    CHECK(hoop_allgather(sub, in, out, count, HOOP_I32) == HOOP_SUCCESS, "allgather %zu", count);
    for (int r = 0; r < n; ++r)
      for (size_t j = 0; j < count; ++j)
        CHECK(out[(size_t)r * count + j] == (first + r) * 1000003 + (int32_t)j, "allgather %zu block %d [%zu]", count,
              r, j);
    free(in), free(out);
  }
}

/* Halves: one runs allreduces while the other runs allgathers, then the other way round. */
static void Halves(hoop_comm_t world, int rank, int size) {
  const int color = rank * 2 / size;
  const int low = (size + 1) / 2; /* rank * 2 / size is 0 below it */
  const int first = color == 0 ? 0 : low, n = color == 0 ? low : size - low;
  hoop_comm_t half = NULL;
  CHECK(hoop_comm_split(world, color, rank, &half) == HOOP_SUCCESS && half, "split in halves");
  CHECK(SizeOf(half) == n && RankOf(half) == rank - first, "half: rank %d of %d", RankOf(half), SizeOf(half));
  int lr = -1, ls = -1;
  CHECK(hoop_local_rank(half, &lr) == HOOP_SUCCESS && hoop_local_size(half, &ls) == HOOP_SUCCESS, "local");
  CHECK(lr == rank - first && ls == n, "one host: local rank %d of %d", lr, ls);
  for (int round = 0; round < 2; ++round) {
    if ((color + round) % 2 == 0)
      GroupAllreduce(half, first, n);
    else
      GroupAllgather(half, first, n);
  }
  /* A split of the split: by parity inside the half. */
  hoop_comm_t quarter = NULL;
  const int sub_rank = rank - first;
  CHECK(hoop_comm_split(half, sub_rank % 2, sub_rank, &quarter) == HOOP_SUCCESS && quarter, "split of a split");
  CHECK(SizeOf(quarter) == (n - sub_rank % 2 + 1) / 2 && RankOf(quarter) == sub_rank / 2, "quarter: rank %d of %d",
        RankOf(quarter), SizeOf(quarter));
  int one = 1, total = 0;
  CHECK(hoop_allreduce(quarter, &one, &total, 1, HOOP_I32, HOOP_SUM) == HOOP_SUCCESS && total == SizeOf(quarter),
        "quarter allreduce %d", total);
  CHECK(hoop_comm_free(quarter) == HOOP_SUCCESS, "free quarter");
  CHECK(hoop_comm_free(half) == HOOP_SUCCESS, "free half");
}

/* Pairs {2c, 2c+1} ordered by key -rank: the higher world rank is rank 0 (8 ranks: 4 x 2). */
static void Pairs(hoop_comm_t world, int rank, int size) {
  hoop_comm_t pair = NULL;
  CHECK(hoop_comm_split(world, rank / 2, -rank, &pair) == HOOP_SUCCESS && pair, "split in pairs");
  const int n = (rank / 2) * 2 + 1 < size ? 2 : 1;
  const int expect = n == 1 ? 0 : 1 - rank % 2;
  CHECK(SizeOf(pair) == n && RankOf(pair) == expect, "pair: rank %d of %d", RankOf(pair), SizeOf(pair));
  /* Alternate pairs run different collectives at the same time: a broadcast, or an allreduce. */
  int64_t v[5] = {rank, rank, rank, rank, rank};
  if ((rank / 2) % 2 == 0) {
    CHECK(hoop_broadcast(pair, v, v, 5, HOOP_I64, 0) == HOOP_SUCCESS, "pair broadcast");
    const int64_t root_world = n == 1 ? rank : (rank / 2) * 2 + 1;
    for (int i = 0; i < 5; ++i) CHECK(v[i] == root_world, "broadcast got %lld", (long long)v[i]);
  } else {
    CHECK(hoop_allreduce(pair, v, v, 5, HOOP_I64, HOOP_SUM) == HOOP_SUCCESS, "pair allreduce");
    const int64_t sum = n == 1 ? rank : 2 * ((rank / 2) * 2) + 1;
    for (int i = 0; i < 5; ++i) CHECK(v[i] == sum, "allreduce got %lld", (long long)v[i]);
  }
  if (n == 2) {
    const int other = 1 - expect;
    int out = rank * 10, in = -1;
    hoop_request_t r = NULL;
    hoop_recv_info_t info;
    CHECK(hoop_isend(pair, &out, 1, HOOP_I32, other, 3, &r) == HOOP_SUCCESS, "pair isend");
    CHECK(hoop_recv(pair, &in, 1, HOOP_I32, HOOP_ANY_SOURCE, 3, &info) == HOOP_SUCCESS, "pair recv");
    CHECK(hoop_wait(r) == HOOP_SUCCESS, "pair wait");
    CHECK(in == (rank ^ 1) * 10 && info.source == other, "pair got %d from %d", in, info.source);
  }
  CHECK(hoop_comm_free(pair) == HOOP_SUCCESS, "free pair");
}

/* A dup: same ranks, its own messages. Each rank sends to the next on the world and on the dup
 * with one tag, and receives the dup's first. */
static void Dup(hoop_comm_t world, int rank, int size) {
  hoop_comm_t dup = NULL;
  CHECK(hoop_comm_dup(world, &dup) == HOOP_SUCCESS && dup, "dup");
  CHECK(SizeOf(dup) == size && RankOf(dup) == rank, "dup rank");
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  int a = 100 + rank, b = 200 + rank, got_b = -1, got_a = -1;
  hoop_request_t r[2];
  CHECK(hoop_isend(world, &a, 1, HOOP_I32, next, 5, &r[0]) == HOOP_SUCCESS, "isend world");
  CHECK(hoop_isend(dup, &b, 1, HOOP_I32, next, 5, &r[1]) == HOOP_SUCCESS, "isend dup");
  CHECK(hoop_recv(dup, &got_b, 1, HOOP_I32, prev, 5, NULL) == HOOP_SUCCESS && got_b == 200 + prev, "dup got %d", got_b);
  CHECK(hoop_recv(world, &got_a, 1, HOOP_I32, prev, 5, NULL) == HOOP_SUCCESS && got_a == 100 + prev, "world got %d",
        got_a);
  CHECK(hoop_wait_all(r, 2) == HOOP_SUCCESS, "wait sends");
  /* Collectives on both, in flight together. */
  int x = rank, y = 2 * rank, sx = 0, sy = 0;
  hoop_request_t q[2];
  CHECK(hoop_iallreduce(world, &x, &sx, 1, HOOP_I32, HOOP_SUM, &q[0]) == HOOP_SUCCESS, "iallreduce world");
  CHECK(hoop_iallreduce(dup, &y, &sy, 1, HOOP_I32, HOOP_SUM, &q[1]) == HOOP_SUCCESS, "iallreduce dup");
  CHECK(hoop_wait_all(q, 2) == HOOP_SUCCESS, "wait allreduces");
  CHECK(sx == size * (size - 1) / 2 && sy == size * (size - 1), "sums %d %d", sx, sy);
  CHECK(hoop_comm_free(dup) == HOOP_SUCCESS, "free dup");
}

static void Undefined(hoop_comm_t world, int rank, int size) {
  hoop_comm_t sub = (hoop_comm_t)&g_rank; /* must be overwritten */
  CHECK(hoop_comm_split(world, rank == 0 ? HOOP_UNDEFINED : 0, rank, &sub) == HOOP_SUCCESS, "split undefined");
  if (rank == 0) {
    CHECK(sub == NULL, "HOOP_UNDEFINED gave a communicator");
    return;
  }
  CHECK(sub && SizeOf(sub) == size - 1 && RankOf(sub) == rank - 1, "the rest");
  int one = 1, n = 0;
  CHECK(hoop_allreduce(sub, &one, &n, 1, HOOP_I32, HOOP_SUM) == HOOP_SUCCESS && n == size - 1, "rest allreduce");
  CHECK(hoop_comm_free(sub) == HOOP_SUCCESS, "free rest");
}

/* More than 255 communicators at once over one set of connections: a limit, said as one
 * (HOOP_ERR_INVALID_ARGUMENT naming it), not a disagreement between ranks (HOOP_ERR_MISMATCH). */
static void TooMany(hoop_comm_t world) {
  static hoop_comm_t dups[256];
  int made = 0;
  hoop_status_t s = HOOP_SUCCESS;
  while (made < 256 && (s = hoop_comm_dup(world, &dups[made])) == HOOP_SUCCESS) ++made;
  CHECK(made > 200 && made <= 255 && s == HOOP_ERR_INVALID_ARGUMENT, "dup %d: status %d", made, (int)s);
  CHECK(strstr(hoop_last_error(), "255 communicators already share these connections") != NULL, "too many: %s",
        hoop_last_error());
  for (int i = 0; i < made; ++i) CHECK(hoop_comm_free(dups[i]) == HOOP_SUCCESS, "free dup %d", i);
}

static void Recycle(hoop_comm_t world, int size) {
  for (int i = 0; i < 300; ++i) {
    hoop_comm_t dup = NULL;
    CHECK(hoop_comm_dup(world, &dup) == HOOP_SUCCESS && dup, "dup %d", i);
    int one = 1, n = 0;
    CHECK(hoop_allreduce(dup, &one, &n, 1, HOOP_I32, HOOP_SUM) == HOOP_SUCCESS && n == size, "dup %d allreduce", i);
    CHECK(hoop_comm_free(dup) == HOOP_SUCCESS, "free dup %d", i);
  }
}

static void BadCalls(hoop_comm_t world, int rank, int size) {
  hoop_comm_t sub = NULL;
  CHECK(hoop_comm_split(world, 0, 0, NULL) == HOOP_ERR_INVALID_ARGUMENT, "NULL newcomm");
  CHECK(strstr(hoop_last_error(), "newcomm is NULL") != NULL, "NULL newcomm message");
  /* A negative color on rank 0 alone: every rank fails alike, and the world goes on. */
  CHECK(hoop_comm_split(world, rank == 0 ? -5 : 0, rank, &sub) == HOOP_ERR_INVALID_ARGUMENT && sub == NULL,
        "negative color");
  CHECK(strstr(hoop_last_error(), "rank 0 passed color -5") != NULL, "negative color message");
  int one = 1, n = 0;
  CHECK(hoop_allreduce(world, &one, &n, 1, HOOP_I32, HOOP_SUM) == HOOP_SUCCESS && n == size, "world after");
  CHECK(hoop_comm_dup(world, &sub) == HOOP_SUCCESS, "dup");
  CHECK(hoop_comm_free(sub) == HOOP_SUCCESS, "free");
  CHECK(hoop_barrier(sub) == HOOP_ERR_INVALID_ARGUMENT && strstr(hoop_last_error(), "finalized"), "freed handle");
  CHECK(hoop_comm_free(sub) == HOOP_ERR_INVALID_ARGUMENT, "freed twice");
  CHECK(strstr(hoop_last_error(), "hoop_comm_free: the communicator was freed already") != NULL,
        "freed twice names hoop_comm_free: %s", hoop_last_error());
  CHECK(hoop_comm_free(NULL) == HOOP_SUCCESS, "free NULL");
}

/* The last rank calls a barrier where the others split: a split must not hang. */
static void Missing(hoop_comm_t world, int rank, int size) {
  hoop_comm_t sub = NULL;
  hoop_status_t s = rank == size - 1 ? hoop_barrier(world) : hoop_comm_split(world, 0, rank, &sub);
  CHECK(s != HOOP_SUCCESS && sub == NULL, "a split with a rank missing succeeded");
  printf("rank %d: missing: %s\n", rank, hoop_last_error());
}

int main(int argc, char** argv) {
  CheckUsage(argc, argv,
             "[all|missing]\n  sub-communicators from C (default all); missing: one rank calls a barrier where the "
             "others\n  split. Run as every rank of a job (hooprun).");
  const char* mode = argc > 1 ? argv[1] : "all";
  hoop_comm_t world = NULL;
  CHECK(hoop_init_from_env(&world) == HOOP_SUCCESS, "init");
  const int rank = RankOf(world), size = SizeOf(world);
  g_rank = rank;
  if (strcmp(mode, "missing") == 0) {
    if (size > 1) Missing(world, rank, size);
  } else {
    Halves(world, rank, size);
    Pairs(world, rank, size);
    Dup(world, rank, size);
    if (size > 1) Undefined(world, rank, size);
    Recycle(world, size);
    TooMany(world);
    BadCalls(world, rank, size);
  }
  CHECK(hoop_finalize(world) == HOOP_SUCCESS, "finalize");
  printf("c-split ok rank %d of %d\n", rank, size);
  return 0;
}
