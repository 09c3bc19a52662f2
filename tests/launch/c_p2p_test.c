/* Point-to-point from C, including only <hoop/hoop.h>: every dtype at counts 0, 1, 7 and a large
 * odd one around a ring; 1000 messages of random sizes between random pairs, received in reverse
 * order of sending (most arrive before their receive); any-source receives; one pair and one tag
 * keeping its order across eager and rendezvous sizes; a ping-pong of messages inside their frames
 * (info, a receive posted ahead, refusals); sends and receives in flight across
 * collectives; sends to self; bad calls (peer, tag, short receive, dtype, freed request).
 * Modes: (none) all of that; "credit" the same traffic, meant to run with a tiny
 * HOOP_UNEXPECTED_BYTES (senders wait for credit); "timeout" a receive nobody sends to, meant to
 * run with a short HOOP_TIMEOUT. Run as every rank of a job (hooprun).
 * Prints "c-p2p ok rank R of N". */
#include <hoop/hoop.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK_TAG "c-p2p"
#define CHECK_RANK g_rank
#include "tests/launch/c_check.h"

static int g_rank = -1;

static size_t Size(hoop_dtype_t d) {
  switch (d) {
    case HOOP_U8:
    case HOOP_I8:
    case HOOP_BOOL: return 1;
    case HOOP_F16:
    case HOOP_BF16: return 2;
    case HOOP_I32:
    case HOOP_F32: return 4;
    default: return 8;
  }
}

/* Byte j of message m from src to dst. */
static unsigned char Byte(int src, int dst, int m, size_t j) {
  return (unsigned char)(src * 131 + dst * 31 + m * 7 + (int)(j % 251));
}
static void Fill(unsigned char* p, size_t n, int src, int dst, int m) {
  for (size_t j = 0; j < n; ++j) p[j] = Byte(src, dst, m, j);
}
static int Same(const unsigned char* p, size_t n, int src, int dst, int m) {
  for (size_t j = 0; j < n; ++j)
    if (p[j] != Byte(src, dst, m, j)) return 0;
  return 1;
}

static uint64_t g_lcg = 12345;
static uint32_t Rand(void) {
  g_lcg = g_lcg * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(g_lcg >> 33);
}

/* Every dtype, counts 0, 1, 7 and a large odd one, to the next rank (to itself alone). */
static void Ring(hoop_comm_t comm, int rank, int size) {
  static const hoop_dtype_t dtypes[] = {HOOP_U8,   HOOP_I8,  HOOP_I32, HOOP_I64, HOOP_F16,
                                        HOOP_BF16, HOOP_F32, HOOP_F64, HOOP_BOOL};
  static const size_t counts[] = {0, 1, 7, 300001};
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  int m = 0;
  for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; ++d) {
    for (size_t c = 0; c < 4; ++c, ++m) {
      const size_t bytes = counts[c] * Size(dtypes[d]);
      unsigned char* out = malloc(bytes + 1);
      unsigned char* in = malloc(bytes + 1);
      Fill(out, bytes, rank, next, m);
      hoop_request_t r = NULL;
      CHECK(hoop_isend(comm, out, counts[c], dtypes[d], next, m, &r) == HOOP_SUCCESS, "isend dtype %d count %zu",
            (int)dtypes[d], counts[c]);
      hoop_recv_info_t info = {-2, -2, 99};
      CHECK(hoop_recv(comm, in, counts[c], dtypes[d], prev, m, &info) == HOOP_SUCCESS, "recv dtype %d count %zu",
            (int)dtypes[d], counts[c]);
      CHECK(info.source == prev && info.tag == m && info.count == counts[c], "info {%d, %d, %zu}", info.source,
            info.tag, info.count);
      CHECK(Same(in, bytes, prev, rank, m), "dtype %d count %zu: wrong bytes", (int)dtypes[d], counts[c]);
      CHECK(hoop_wait(r) == HOOP_SUCCESS, "wait isend");
      free(out);
      free(in);
    }
  }
}

/* 1000 messages of random sizes between random pairs; receives posted in reverse order. */
static void Random(hoop_comm_t comm, int rank, int size) {
  enum { M = 1000 };
  static int src[M], dst[M];
  static size_t bytes[M];
  static unsigned char* buf[M];
  static hoop_recv_info_t info[M];
  hoop_request_t* req = malloc(sizeof(hoop_request_t) * 2 * M);
  int n = 0;
  g_lcg = 777;
  for (int m = 0; m < M; ++m) {
    src[m] = (int)(Rand() % (uint32_t)size);
    dst[m] = (int)(Rand() % (uint32_t)size);
    const uint32_t kind = Rand() % 10;
    bytes[m] = kind < 6 ? Rand() % 64 : kind < 9 ? Rand() % 8192 : Rand() % 300000;
  }
  for (int m = 0; m < M; ++m) {
    if (src[m] != rank) continue;
    buf[m] = malloc(bytes[m] + 1);
    Fill(buf[m], bytes[m], src[m], dst[m], m);
    CHECK(hoop_isend(comm, buf[m], bytes[m], HOOP_U8, dst[m], m, &req[n++]) == HOOP_SUCCESS, "isend %d", m);
  }
  unsigned char** got = calloc(M, sizeof(unsigned char*));
  for (int m = M - 1; m >= 0; --m) {
    if (dst[m] != rank) continue;
    const size_t room = bytes[m] + (size_t)(m % 3); /* longer receives are fine */
    got[m] = malloc(room + 1);
    CHECK(hoop_irecv(comm, got[m], room, HOOP_U8, src[m], m, &info[m], &req[n++]) == HOOP_SUCCESS, "irecv %d", m);
  }
  CHECK(hoop_wait_all(req, n) == HOOP_SUCCESS, "wait_all of %d", n);
  for (int m = 0; m < M; ++m) {
    if (dst[m] == rank) {
      CHECK(info[m].source == src[m] && info[m].tag == m && info[m].count == bytes[m], "message %d info", m);
      CHECK(Same(got[m], bytes[m], src[m], rank, m), "message %d (%zu B from rank %d): wrong bytes", m, bytes[m],
            src[m]);
      free(got[m]);
    }
    if (src[m] == rank) free(buf[m]);
  }
  free(got);
  free(req);
}

/* Every rank sends (r + 1) * 10 i32 to every rank, tag 7; each takes them with any-source. */
static void AnySource(hoop_comm_t comm, int rank, int size) {
  hoop_request_t* req = malloc(sizeof(hoop_request_t) * (size_t)size);
  int* out = malloc(sizeof(int) * (size_t)(rank + 1) * 10);
  for (int i = 0; i < (rank + 1) * 10; ++i) out[i] = rank * 1000 + i;
  for (int d = 0; d < size; ++d)
    CHECK(hoop_isend(comm, out, (size_t)(rank + 1) * 10, HOOP_I32, d, 7, &req[d]) == HOOP_SUCCESS, "isend to %d", d);
  int* seen = calloc((size_t)size, sizeof(int));
  int* in = malloc(sizeof(int) * (size_t)(size + 1) * 10);
  for (int k = 0; k < size; ++k) {
    hoop_recv_info_t info;
    CHECK(hoop_recv(comm, in, (size_t)(size + 1) * 10, HOOP_I32, HOOP_ANY_SOURCE, 7, &info) == HOOP_SUCCESS,
          "any-source recv %d", k);
    CHECK(info.source >= 0 && info.source < size && !seen[info.source], "source %d twice or out of range", info.source);
    seen[info.source] = 1;
    CHECK(info.tag == 7 && info.count == (size_t)(info.source + 1) * 10, "info count %zu from %d", info.count,
          info.source);
    for (size_t i = 0; i < info.count; ++i) CHECK(in[i] == info.source * 1000 + (int)i, "element %zu", i);
  }
  CHECK(hoop_wait_all(req, size) == HOOP_SUCCESS, "wait sends");
  free(req);
  free(out);
  free(in);
  free(seen);
}

/* One pair, one tag: sizes across the eager/rendezvous line stay in order. */
static void Order(hoop_comm_t comm, int rank, int size) {
  static const size_t sizes[] = {10, 100000, 3, 70000, 0, 65536, 65537, 1};
  enum { K = sizeof sizes / sizeof sizes[0] };
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  hoop_request_t req[K];
  unsigned char* out[K];
  for (int k = 0; k < K; ++k) {
    out[k] = malloc(sizes[k] + 1);
    Fill(out[k], sizes[k], rank, next, 5000 + k);
    CHECK(hoop_isend(comm, out[k], sizes[k], HOOP_U8, next, 3, &req[k]) == HOOP_SUCCESS, "isend %d", k);
  }
  CHECK(hoop_barrier(comm) == HOOP_SUCCESS, "barrier"); /* all of them arrive before any receive */
  unsigned char* in = malloc(100001);
  for (int k = 0; k < K; ++k) {
    hoop_recv_info_t info;
    CHECK(hoop_recv(comm, in, 100001, HOOP_U8, prev, 3, &info) == HOOP_SUCCESS, "recv %d", k);
    CHECK(info.count == sizes[k], "message %d: %zu bytes, want %zu (out of order)", k, info.count, sizes[k]);
    CHECK(Same(in, sizes[k], prev, rank, 5000 + k), "message %d bytes", k);
  }
  CHECK(hoop_wait_all(req, K) == HOOP_SUCCESS, "wait sends");
  for (int k = 0; k < K; ++k) free(out[k]);
  free(in);
}

/* Ping-pong of messages that ride inside their frame (up to 24 bytes), where a blocking receive
 * takes them as they come (shm): what info says, a receive posted ahead keeping its place, and
 * the refusals (too long, another dtype) worded as for any message. */
static void Inline(hoop_comm_t comm, int rank, int size) {
  const int other = 1 - rank;
  const int rounds = size >= 2 && rank <= 1 ? 300 : 0; /* ranks 0 and 1; the others wait in the barriers */
  int32_t out[6], in[6];
  for (int round = 0; round < rounds; ++round) {
    const size_t n = (size_t)(round % 7); /* 0 to 6 i32: 0 to 24 bytes */
    for (size_t i = 0; i < n; ++i) out[i] = round * 10 + (int)i + rank * 1000;
    for (int turn = 0; turn < 2; ++turn) {
      if (turn == rank) {
        CHECK(hoop_send(comm, out, n, HOOP_I32, other, 14) == HOOP_SUCCESS, "send round %d", round);
      } else {
        hoop_recv_info_t info = {-1, -1, 99};
        memset(in, 0xff, sizeof in);
        CHECK(hoop_recv(comm, in, 6, HOOP_I32, other, 14, &info) == HOOP_SUCCESS, "recv round %d", round);
        CHECK(info.source == other && info.tag == 14 && info.count == n, "round %d info {%d, %d, %zu}", round,
              info.source, info.tag, info.count);
        for (size_t i = 0; i < n; ++i)
          CHECK(in[i] == round * 10 + (int)i + other * 1000, "round %d element %zu: %d", round, i, in[i]);
        CHECK(n == 6 || in[n] == -1, "round %d: written past the message", round);
      }
    }
  }
  /* A receive posted ahead takes the first of two messages with its tag, the blocking one the second. */
  hoop_request_t first = NULL;
  int32_t a = 0, b = 0;
  if (rank == 1 && rounds) CHECK(hoop_irecv(comm, &a, 1, HOOP_I32, 0, 15, NULL, &first) == HOOP_SUCCESS, "irecv");
  CHECK(hoop_barrier(comm) == HOOP_SUCCESS, "barrier");
  if (rank == 0 && rounds) {
    const int32_t x = 111, y = 222;
    CHECK(hoop_send(comm, &x, 1, HOOP_I32, 1, 15) == HOOP_SUCCESS &&
              hoop_send(comm, &y, 1, HOOP_I32, 1, 15) == HOOP_SUCCESS,
          "sends");
  } else if (rank == 1 && rounds) {
    CHECK(hoop_recv(comm, &b, 1, HOOP_I32, 0, 15, NULL) == HOOP_SUCCESS && hoop_wait(first) == HOOP_SUCCESS,
          "receives");
    CHECK(a == 111 && b == 222, "posted ahead got %d, the blocking one %d", a, b);
  }
  /* Refused as any message is: too long for the receive, and another dtype. */
  CHECK(hoop_barrier(comm) == HOOP_SUCCESS, "barrier");
  if (rank == 0 && rounds) {
    const int32_t v[6] = {1, 2, 3, 4, 5, 6};
    const float f = 1.5f;
    CHECK(hoop_send(comm, v, 6, HOOP_I32, 1, 16) == HOOP_SUCCESS &&
              hoop_send(comm, &f, 1, HOOP_F32, 1, 17) == HOOP_SUCCESS,
          "sends to be refused");
  } else if (rank == 1 && rounds) {
    CHECK(hoop_recv(comm, in, 5, HOOP_I32, 0, 16, NULL) == HOOP_ERR_INVALID_ARGUMENT, "short receive accepted");
    CHECK(strstr(hoop_last_error(), "24 bytes") && strstr(hoop_last_error(), "20 bytes"), "message: %s",
          hoop_last_error());
    CHECK(hoop_recv(comm, in, 1, HOOP_I32, 0, 17, NULL) == HOOP_ERR_INVALID_ARGUMENT, "dtype mismatch accepted");
    CHECK(strstr(hoop_last_error(), "f32") && strstr(hoop_last_error(), "i32"), "message: %s", hoop_last_error());
  }
  CHECK(hoop_barrier(comm) == HOOP_SUCCESS, "barrier after the inline ping-pong");
}

/* Sends and receives in flight while collectives run. */
static void Interleave(hoop_comm_t comm, int rank, int size) {
  enum { N = 200001 };
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  float* out = malloc(sizeof(float) * N);
  float* in = malloc(sizeof(float) * N);
  for (int i = 0; i < N; ++i) out[i] = (float)(rank + i % 100);
  hoop_request_t rr = NULL, sr = NULL;
  CHECK(hoop_irecv(comm, in, N, HOOP_F32, prev, 21, NULL, &rr) == HOOP_SUCCESS, "irecv");
  double x = rank, sum = 0;
  CHECK(hoop_allreduce(comm, &x, &sum, 1, HOOP_F64, HOOP_SUM) == HOOP_SUCCESS, "allreduce");
  CHECK(sum == size * (size - 1) / 2.0, "allreduce sum %f", sum);
  CHECK(hoop_isend(comm, out, N, HOOP_F32, next, 21, &sr) == HOOP_SUCCESS, "isend");
  int* all = malloc(sizeof(int) * (size_t)size * 3);
  int mine[3] = {rank, rank, rank};
  CHECK(hoop_allgather(comm, mine, all, 3, HOOP_I32) == HOOP_SUCCESS, "allgather");
  CHECK(hoop_wait(rr) == HOOP_SUCCESS && hoop_wait(sr) == HOOP_SUCCESS, "wait");
  for (int i = 0; i < N; ++i) CHECK(in[i] == (float)(prev + i % 100), "element %d", i);
  free(out);
  free(in);
  free(all);
}

/* Bad calls: refused with the rank, the call and the argument named; the communicator goes on. */
static void BadCalls(hoop_comm_t comm, int rank, int size) {
  int v[10] = {0};
  CHECK(hoop_send(comm, v, 1, HOOP_I32, size, 0) == HOOP_ERR_INVALID_ARGUMENT, "peer out of range accepted");
  CHECK(strstr(hoop_last_error(), "peer") && strstr(hoop_last_error(), "hoop_send"), "message: %s", hoop_last_error());
  CHECK(hoop_send(comm, v, 1, HOOP_I32, 0, -1) == HOOP_ERR_INVALID_ARGUMENT, "negative tag accepted");
  CHECK(strstr(hoop_last_error(), "tag -1"), "message: %s", hoop_last_error());
  CHECK(hoop_recv(comm, v, 1, HOOP_I32, -2, 0, NULL) == HOOP_ERR_INVALID_ARGUMENT, "peer -2 accepted");
  CHECK(hoop_send(comm, v, 1, HOOP_I32, HOOP_ANY_SOURCE, 0) == HOOP_ERR_INVALID_ARGUMENT, "send to any accepted");
  CHECK(hoop_isend(comm, v, 1, HOOP_I32, 0, 0, NULL) == HOOP_ERR_INVALID_ARGUMENT, "NULL request accepted");
  CHECK(hoop_send(comm, NULL, 3, HOOP_I32, 0, 0) == HOOP_ERR_INVALID_ARGUMENT, "NULL buffer accepted");

  /* A receive shorter than the message, and one of another dtype: errors naming both sides. */
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  hoop_request_t r = NULL;
  CHECK(hoop_isend(comm, v, 10, HOOP_I32, next, 11, &r) == HOOP_SUCCESS, "isend 10");
  CHECK(hoop_recv(comm, v, 5, HOOP_I32, prev, 11, NULL) == HOOP_ERR_INVALID_ARGUMENT, "short receive accepted");
  CHECK(strstr(hoop_last_error(), "40 bytes") && strstr(hoop_last_error(), "20 bytes"), "message: %s",
        hoop_last_error());
  CHECK(hoop_wait(r) == HOOP_SUCCESS, "the send of a refused message");
  CHECK(hoop_isend(comm, v, 4, HOOP_F32, next, 12, &r) == HOOP_SUCCESS, "isend f32");
  CHECK(hoop_recv(comm, v, 4, HOOP_I32, prev, 12, NULL) == HOOP_ERR_INVALID_ARGUMENT, "dtype mismatch accepted");
  CHECK(strstr(hoop_last_error(), "f32") && strstr(hoop_last_error(), "i32"), "message: %s", hoop_last_error());
  CHECK(hoop_wait(r) == HOOP_SUCCESS, "the send of a refused message");
  CHECK(hoop_wait(r) == HOOP_ERR_INVALID_ARGUMENT, "wait on a freed request accepted");
  CHECK(hoop_barrier(comm) == HOOP_SUCCESS, "barrier after the bad calls");
}

/* Rank 0 waits for a message from the last rank that never comes (HOOP_TIMEOUT=2: the others
 * reach the barrier after rank 0 gave up, so theirs does not time out too). */
static void Timeout(hoop_comm_t comm, int rank, int size) {
  if (rank != 0) {
    struct timespec t = {2, 500000000};
    nanosleep(&t, NULL);
  } else {
    int v;
    hoop_status_t s = hoop_recv(comm, &v, 1, HOOP_I32, size - 1, 99, NULL);
    CHECK(s == HOOP_ERR_TIMEOUT, "status %d", (int)s);
    char want[64];
    snprintf(want, sizeof want, "rank %d, tag 99", size - 1);
    CHECK(strstr(hoop_last_error(), want) && strstr(hoop_last_error(), "HOOP_TIMEOUT"), "message: %s",
          hoop_last_error());
  }
  CHECK(hoop_barrier(comm) == HOOP_SUCCESS, "barrier after the timeout");
}

int main(int argc, char** argv) {
  CheckUsage(
      argc, argv,
      "[all|credit|timeout]\n  point-to-point from C (default all); credit: meant for a tiny HOOP_UNEXPECTED_BYTES; "
      "timeout: a\n  receive nobody sends to, meant for a short HOOP_TIMEOUT. Run as every rank of a job (hooprun).");
  const char* mode = argc > 1 ? argv[1] : "all";
  hoop_comm_t comm = NULL;
  CHECK(hoop_init_from_env(&comm) == HOOP_SUCCESS, "init");
  int rank = -1, size = -1;
  CHECK(hoop_rank(comm, &rank) == HOOP_SUCCESS && hoop_size(comm, &size) == HOOP_SUCCESS, "rank/size");
  g_rank = rank;
  if (strcmp(mode, "timeout") == 0) {
    Timeout(comm, rank, size);
  } else {
    Ring(comm, rank, size);
    Random(comm, rank, size);
    AnySource(comm, rank, size);
    Order(comm, rank, size);
    Inline(comm, rank, size);
    Interleave(comm, rank, size);
    if (strcmp(mode, "all") == 0) BadCalls(comm, rank, size);
  }
  CHECK(hoop_finalize(comm) == HOOP_SUCCESS, "finalize");
  printf("c-p2p ok rank %d of %d\n", rank, size);
  return 0;
}
