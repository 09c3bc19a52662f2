/* The C API's nonblocking calls from C, including only <hoop/hoop.h>: 16 allreduces of different
 * shapes in flight waited in reverse order (some with hoop_wait_background), test-until-done, every hoop_i* collective posted
 * around a blocking call and completed with hoop_wait_all, hoop_request_free on a running
 * request, a request still queued at hoop_finalize, and bad calls (freed, NULL, repeated
 * requests; bad arguments refused at post time). Run as every rank of a job (hooprun).
 * Prints "c-nonblocking ok rank R of N". */
#include <hoop/hoop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_TAG "c-nonblocking"
#include "tests/launch/c_check.h"

enum { kInFlight = 16 };

/* Rank r's element i: small integers, so sums, products, minima and maxima are exact in every
 * dtype used here. */
static int Value(int rank, size_t i, int call) { return (int)((rank * 7 + (int)(i % 13) + call) % 5) - 2; }

int main(int argc, char** argv) {
  CheckUsage(argc, argv,
             "\n  (no arguments) the nonblocking calls from C. Run as every rank of a job\n  (hooprun -np N "
             "hoop-c-nonblocking-test).");
  hoop_comm_t comm = NULL;
  CHECK(hoop_init_from_env(&comm) == HOOP_SUCCESS, "init");
  int rank = -1, size = -1;
  CHECK(hoop_rank(comm, &rank) == HOOP_SUCCESS && hoop_size(comm, &size) == HOOP_SUCCESS, "rank/size");

  /* 16 allreduces in flight: counts 0, 1, 7 and a large odd one among them, f64 / i32 / f32 and
   * sum / max / min / prod, waited for in reverse order. */
  static const size_t counts[kInFlight] = {0, 1, 7, 100003, 3, 64, 1000, 5, 4097, 2, 31, 0, 999, 1, 65537, 12};
  static const hoop_op_t ops[4] = {HOOP_SUM, HOOP_MAX, HOOP_MIN, HOOP_PROD};
  double* f64[kInFlight];
  int* i32[kInFlight];
  hoop_request_t req[kInFlight];
  for (int c = 0; c < kInFlight; ++c) {
    size_t n = counts[c];
    hoop_op_t op = ops[c % 4];
    if (c % 2 == 0) {
      f64[c] = malloc(sizeof(double) * (n + 1));
      for (size_t i = 0; i < n; ++i) f64[c][i] = Value(rank, i, c);
      CHECK(hoop_iallreduce(comm, f64[c], f64[c], n, HOOP_F64, op, &req[c]) == HOOP_SUCCESS, "iallreduce %d", c);
    } else {
      i32[c] = malloc(sizeof(int) * (n + 1));
      for (size_t i = 0; i < n; ++i) i32[c][i] = Value(rank, i, c);
      CHECK(hoop_iallreduce(comm, i32[c], i32[c], n, HOOP_I32, op, &req[c]) == HOOP_SUCCESS, "iallreduce %d", c);
    }
    CHECK(req[c] != NULL, "request %d is NULL", c);
  }
  for (int c = kInFlight - 1; c >= 0; --c) {
    /* Every third as a framework's completion thread would (nothing spins for it). */
    CHECK((c % 3 == 0 ? hoop_wait_background(req[c]) : hoop_wait(req[c])) == HOOP_SUCCESS, "wait %d", c);
    for (size_t i = 0; i < counts[c]; ++i) {
      long long want = ops[c % 4] == HOOP_SUM ? 0 : ops[c % 4] == HOOP_PROD ? 1 : Value(0, i, c);
      for (int r = 0; r < size; ++r) {
        long long v = Value(r, i, c);
        if (ops[c % 4] == HOOP_SUM)
          want += v;
        else if (ops[c % 4] == HOOP_PROD)
          want *= v;
        else if (ops[c % 4] == HOOP_MAX)
          want = v > want ? v : want;
        else
          want = v < want ? v : want;
      }
      long long got = c % 2 == 0 ? (long long)f64[c][i] : i32[c][i];
      CHECK(got == want, "allreduce %d (count %zu) element %zu: %lld, want %lld", c, counts[c], i, got, want);
    }
    free(c % 2 == 0 ? (void*)f64[c] : (void*)i32[c]);
  }

  /* Test until done; once done, hoop_test keeps saying so and hoop_wait returns at once. */
  {
    enum { N = 200001 };
    float* x = malloc(sizeof(float) * N);
    for (size_t i = 0; i < N; ++i) x[i] = 1.0f;
    hoop_request_t r = NULL;
    CHECK(hoop_iallreduce(comm, x, x, N, HOOP_F32, HOOP_SUM, &r) == HOOP_SUCCESS, "iallreduce for test");
    int done = 0;
    long polls = 0;
    while (!done) {
      CHECK(hoop_test(r, &done) == HOOP_SUCCESS, "test");
      ++polls;
    }
    CHECK(hoop_test(r, &done) == HOOP_SUCCESS && done == 1, "test after done");
    CHECK(hoop_wait(r) == HOOP_SUCCESS, "wait after test");
    CHECK(x[0] == (float)size && x[N - 1] == (float)size, "test-until-done result %f", x[0]);
    CHECK(hoop_test(r, &done) == HOOP_ERR_INVALID_ARGUMENT, "test on a freed request accepted");
    CHECK(strstr(hoop_last_error(), "freed") != NULL, "message: %s", hoop_last_error());
    free(x);
  }

  /* Every nonblocking collective, a blocking call between them, then hoop_wait_all. */
  {
    long long b[4] = {0, 0, 0, 0};
    if (rank == size - 1) b[0] = 5, b[1] = -6, b[2] = 7, b[3] = 1LL << 40;
    int mine[3] = {rank, -rank, rank * 100};
    int* all = malloc(sizeof(int) * 3 * (size_t)size);
    double* rs_in = malloc(sizeof(double) * 2 * (size_t)size);
    for (int i = 0; i < 2 * size; ++i) rs_in[i] = rank + i;
    double rs_out[2] = {-1, -1};
    float a = 1.5f, a_out = 0;
    hoop_request_t rq[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    CHECK(hoop_ibroadcast(comm, rank == size - 1 ? b : NULL, b, 4, HOOP_I64, size - 1, &rq[0]) == HOOP_SUCCESS,
          "ibroadcast");
    CHECK(hoop_iallgather(comm, mine, all, 3, HOOP_I32, &rq[1]) == HOOP_SUCCESS, "iallgather");
    CHECK(hoop_ireduce_scatter(comm, rs_in, rs_out, 2, HOOP_F64, HOOP_SUM, &rq[2]) == HOOP_SUCCESS, "ireduce_scatter");
    CHECK(hoop_ibarrier(comm, &rq[3]) == HOOP_SUCCESS, "ibarrier");
    hoop_allreduce_opts_t opts = {HOOP_COMPRESSION_NONE, NULL};
    CHECK(hoop_iallreduce_ex(comm, &a, &a_out, 1, HOOP_F32, HOOP_AVG, &opts, &rq[4]) == HOOP_SUCCESS, "iallreduce_ex");
    /* rq[5] stays NULL: a complete entry. A blocking call queues behind what was posted. */
    int one = 1, total = 0;
    CHECK(hoop_allreduce(comm, &one, &total, 1, HOOP_I32, HOOP_SUM) == HOOP_SUCCESS && total == size,
          "blocking allreduce among requests: %d", total);
    /* A repeated entry refuses the whole array and frees nothing. */
    hoop_request_t twice[2] = {rq[0], rq[0]};
    CHECK(hoop_wait_all(twice, 2) == HOOP_ERR_INVALID_ARGUMENT, "repeated request accepted");
    CHECK(strstr(hoop_last_error(), "twice") != NULL, "message: %s", hoop_last_error());
    CHECK(hoop_wait_all(rq, 6) == HOOP_SUCCESS, "wait_all");
    for (int i = 0; i < 6; ++i) CHECK(rq[i] == NULL, "entry %d not cleared", i);
    CHECK(b[0] == 5 && b[1] == -6 && b[2] == 7 && b[3] == 1LL << 40, "ibroadcast values");
    for (int r = 0; r < size; ++r)
      CHECK(all[3 * r] == r && all[3 * r + 1] == -r && all[3 * r + 2] == 100 * r, "iallgather block %d", r);
    for (int i = 0; i < 2; ++i) {
      double want = 0;
      for (int r = 0; r < size; ++r) want += r + 2 * rank + i;
      CHECK(rs_out[i] == want, "ireduce_scatter[%d] = %f, want %f", i, rs_out[i], want);
    }
    CHECK(a_out == 1.5f, "iallreduce_ex avg %f", a_out);
    free(all);
    free(rs_in);
  }

  /* Bad calls: refused at post time, with *request NULL; bad request arguments. */
  {
    int x = 0;
    hoop_request_t r = (hoop_request_t)1;
    CHECK(hoop_iallreduce(comm, &x, &x, 1, (hoop_dtype_t)99, HOOP_SUM, &r) == HOOP_ERR_INVALID_ARGUMENT,
          "bad dtype accepted");
    CHECK(r == NULL, "request not NULL after a refused call");
    CHECK(strstr(hoop_last_error(), "hoop_iallreduce") != NULL && strstr(hoop_last_error(), "rank") != NULL,
          "message: %s", hoop_last_error());
    CHECK(hoop_ibroadcast(comm, &x, &x, 1, HOOP_I32, size, &r) == HOOP_ERR_INVALID_ARGUMENT, "root out of range");
    CHECK(hoop_iallreduce(comm, &x, &x, 1, HOOP_I32, HOOP_SUM, NULL) == HOOP_ERR_INVALID_ARGUMENT, "NULL request");
    CHECK(strstr(hoop_last_error(), "request pointer is NULL") != NULL, "message: %s", hoop_last_error());
    CHECK(hoop_wait(NULL) == HOOP_ERR_INVALID_ARGUMENT, "wait(NULL)");
    CHECK(hoop_wait_background(NULL) == HOOP_ERR_INVALID_ARGUMENT, "wait_background(NULL)");
    CHECK(strstr(hoop_last_error(), "hoop_wait_background") != NULL, "message: %s", hoop_last_error());
    CHECK(hoop_test(NULL, &x) == HOOP_ERR_INVALID_ARGUMENT, "test(NULL)");
    CHECK(hoop_wait_all(NULL, 1) == HOOP_ERR_INVALID_ARGUMENT, "wait_all(NULL, 1)");
    CHECK(hoop_wait_all(NULL, -1) == HOOP_ERR_INVALID_ARGUMENT, "wait_all(n -1)");
    CHECK(hoop_wait_all(NULL, 0) == HOOP_SUCCESS, "wait_all of nothing");
    CHECK(hoop_request_free(NULL) == HOOP_SUCCESS, "free(NULL)");
    CHECK(hoop_wait((hoop_request_t)123456789) == HOOP_ERR_INVALID_ARGUMENT, "never issued");

    /* Freed without waiting: the operation still runs (a blocking call after it ends after it). */
    int y = rank + 1, sum = 0;
    CHECK(hoop_iallreduce(comm, &y, &sum, 1, HOOP_I32, HOOP_SUM, &r) == HOOP_SUCCESS, "iallreduce to free");
    CHECK(hoop_request_free(r) == HOOP_SUCCESS, "request_free");
    CHECK(hoop_wait(r) == HOOP_ERR_INVALID_ARGUMENT, "wait on a freed request accepted");
    CHECK(strstr(hoop_last_error(), "hoop_wait") != NULL && strstr(hoop_last_error(), "freed") != NULL, "message: %s",
          hoop_last_error());
    CHECK(hoop_wait_background(r) == HOOP_ERR_INVALID_ARGUMENT, "wait_background on a freed request accepted");
    CHECK(hoop_request_free(r) == HOOP_ERR_INVALID_ARGUMENT, "second free accepted");
    CHECK(hoop_barrier(comm) == HOOP_SUCCESS, "barrier");
    CHECK(sum == size * (size + 1) / 2, "freed request's result %d", sum);
  }

  /* A request still queued at finalize: finalize completes it, and it reports how it ended. */
  static double late[1001];
  for (int i = 0; i < 1001; ++i) late[i] = 2.0;
  hoop_request_t last = NULL;
  CHECK(hoop_iallreduce(comm, late, late, 1001, HOOP_F64, HOOP_SUM, &last) == HOOP_SUCCESS, "late iallreduce");
  CHECK(hoop_finalize(comm) == HOOP_SUCCESS, "finalize");
  CHECK(hoop_wait(last) == HOOP_SUCCESS, "request after finalize");
  CHECK(late[1000] == 2.0 * size, "late result %f", late[1000]);
  hoop_request_t after = (hoop_request_t)1;
  CHECK(hoop_ibarrier(comm, &after) == HOOP_ERR_INVALID_ARGUMENT && after == NULL, "ibarrier after finalize");
  printf("c-nonblocking ok rank %d of %d\n", rank, size);
  return 0;
}
