/* The tensor fusion runtime from C, including only <hoop/hoop.h>: allreduce (with scale factors),
 * broadcast and allgather submitted by name from two threads, completed through callbacks,
 * hoop_fusion_wait and hoop_fusion_test; synchronize; bad calls; direct collectives refused while
 * the runtime drives the communicator and accepted again once it is stopped; a join after uneven
 * steps (rank r runs r + 1 allreduces, then joins); the timeline started and stopped. Run as every rank of a job. Prints "c-fusion ok
 * rank R of N". */
#include <hoop/hoop.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK_TAG "c-fusion"
#include "tests/launch/c_check.h"

enum { K = 24, N = 257 };
static hoop_fusion_t fusion;
static int rank, size;
static float grads[K][N];
static hoop_handle_t handles[K];
static int callbacks_ok, callbacks_failed;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void on_done(hoop_status_t s, const char* message, void* user) {
  (void)message;
  pthread_mutex_lock(&mu);
  if (s == HOOP_SUCCESS && user == (void*)&callbacks_ok)
    ++callbacks_ok;
  else
    ++callbacks_failed;
  pthread_mutex_unlock(&mu);
}

/* Each thread submits half the tensors, in an order that differs per rank. */
static void* submit(void* arg) {
  int half = *(int*)arg;
  for (int j = 0; j < K / 2; ++j) {
    int k = half * (K / 2) + (j * 5 + rank * 7) % (K / 2);
    char name[32];
    snprintf(name, sizeof name, "grad/%d", k);
    hoop_tensor_opts_t o = {HOOP_COMPRESSION_DEFAULT, 0.5, 0};
    hoop_status_t s = hoop_fusion_allreduce(fusion, name, grads[k], grads[k], N, HOOP_F32, HOOP_AVG, k % 2 ? &o : NULL,
                                            on_done, &callbacks_ok, &handles[k]);
    CHECK(s == HOOP_SUCCESS, "submit %s", name);
  }
  return NULL;
}

int main(int argc, char** argv) {
  CheckUsage(argc, argv,
             "\n  (no arguments) the tensor fusion runtime from C, from two threads. Run as every rank of a job\n  "
             "(hooprun -np N hoop-c-fusion-test).");
  hoop_comm_t comm = NULL;
  CHECK(hoop_init_from_env(&comm) == HOOP_SUCCESS, "init");
  hoop_rank(comm, &rank);
  hoop_size(comm, &size);
  CHECK(hoop_fusion_start(comm, &fusion) == HOOP_SUCCESS, "start");
  hoop_fusion_t second = NULL;
  CHECK(hoop_fusion_start(comm, &second) == HOOP_ERR_INVALID_ARGUMENT, "second runtime on one communicator");

  float x[4] = {1, 2, 3, 4};
  CHECK(hoop_allreduce(comm, x, x, 4, HOOP_F32, HOOP_SUM) == HOOP_ERR_INVALID_ARGUMENT, "direct call while fused");
  CHECK(strstr(hoop_last_error(), "tensor fusion runtime drives this communicator") != NULL, "message");
  CHECK(hoop_finalize(comm) == HOOP_ERR_INVALID_ARGUMENT, "finalize while fused");

  for (int k = 0; k < K; ++k)
    for (int i = 0; i < N; ++i) grads[k][i] = (float)(rank + k + i % 5);
  pthread_t t[2];
  int halves[2] = {0, 1};
  for (int i = 0; i < 2; ++i) pthread_create(&t[i], NULL, submit, &halves[i]);
  for (int i = 0; i < 2; ++i) pthread_join(t[i], NULL);

  /* Broadcast and allgather, by handle only. */
  long long b[3] = {0, 0, 0};
  if (rank == size - 1) b[0] = 42, b[1] = -1, b[2] = 7;
  hoop_handle_t hb, hg;
  CHECK(hoop_fusion_broadcast(fusion, "params", rank == size - 1 ? b : NULL, b, 3, HOOP_I64, size - 1, NULL, NULL,
                              &hb) == HOOP_SUCCESS,
        "broadcast");
  int mine[2] = {rank, -rank};
  int* all = malloc(sizeof(int) * 2 * (size_t)size);
  CHECK(hoop_fusion_allgather(fusion, "ranks", mine, all, 2, HOOP_I32, NULL, NULL, &hg) == HOOP_SUCCESS, "allgather");
  int done = 0;
  while (!done) CHECK(hoop_fusion_test(fusion, hg, &done) == HOOP_SUCCESS, "test");
  CHECK(hoop_fusion_wait(fusion, hg) == HOOP_SUCCESS, "allgather result");
  CHECK(hoop_fusion_wait(fusion, hg) == HOOP_ERR_INVALID_ARGUMENT, "a handle is freed by wait");
  for (int r = 0; r < size; ++r) CHECK(all[2 * r] == r && all[2 * r + 1] == -r, "allgather block %d", r);
  CHECK(hoop_fusion_wait(fusion, hb) == HOOP_SUCCESS, "broadcast result");
  CHECK(b[0] == 42 && b[1] == -1 && b[2] == 7, "broadcast values");

  CHECK(hoop_fusion_synchronize(fusion) == HOOP_SUCCESS, "synchronize");
  for (int k = 0; k < K; ++k) {
    CHECK(hoop_fusion_wait(fusion, handles[k]) == HOOP_SUCCESS, "grad %d", k);
    for (int i = 0; i < N; ++i) {
      /* avg of (r + k + i%5) over ranks, times the prescale 0.5 for odd k */
      float want = (float)((size - 1) / 2.0 + k + i % 5) * (k % 2 ? 0.5f : 1.0f);
      CHECK(grads[k][i] == want, "grad %d[%d] = %f, want %f", k, i, grads[k][i], want);
    }
  }
  pthread_mutex_lock(&mu);
  CHECK(callbacks_ok == K && callbacks_failed == 0, "%d callbacks, %d failed", callbacks_ok, callbacks_failed);
  pthread_mutex_unlock(&mu);

  /* Bad calls fail at once, with no handle and no callback. */
  hoop_handle_t h = -1;
  int ints[2] = {1, 2};
  hoop_tensor_opts_t scale = {HOOP_COMPRESSION_DEFAULT, 2, 0};
  CHECK(hoop_fusion_allreduce(fusion, "ints", ints, ints, 2, HOOP_I32, HOOP_SUM, &scale, on_done, NULL, &h) ==
            HOOP_ERR_INVALID_ARGUMENT,
        "scale on integers");
  CHECK(strstr(hoop_last_error(), "scale factors need floating-point data, not i32") != NULL, "scale message");
  CHECK(hoop_fusion_allreduce(fusion, NULL, x, x, 4, HOOP_F32, HOOP_SUM, NULL, NULL, NULL, &h) ==
            HOOP_ERR_INVALID_ARGUMENT,
        "no name");
  CHECK(hoop_fusion_allreduce(fusion, "x", x, x, 4, HOOP_F32, HOOP_SUM, NULL, NULL, NULL, NULL) ==
            HOOP_ERR_INVALID_ARGUMENT,
        "neither handle nor callback");
  CHECK(hoop_fusion_broadcast(fusion, "x", x, x, 4, HOOP_F32, size, NULL, NULL, &h) == HOOP_ERR_INVALID_ARGUMENT,
        "root");
  CHECK(strstr(hoop_last_error(), "is not a rank") != NULL, "root message");
  pthread_mutex_lock(&mu);
  CHECK(callbacks_failed == 0, "a refused call ran its callback");
  pthread_mutex_unlock(&mu);

  /* Uneven steps: rank r runs r + 1 allreduces, then joins; the joined stand in with zeros. */
  int last = -1, joined = -1;
  for (int step = 0; step <= rank; ++step) {
    float v[3] = {1, 1, (float)rank};
    CHECK(hoop_fusion_allreduce(fusion, "uneven", v, v, 3, HOOP_F32, HOOP_SUM, NULL, NULL, NULL, &h) == HOOP_SUCCESS,
          "uneven step %d", step);
    CHECK(hoop_fusion_wait(fusion, h) == HOOP_SUCCESS, "uneven step %d result", step);
    CHECK(v[0] == (float)(size - step), "uneven step %d: %g ranks, want %d", step, v[0], size - step);
  }
  CHECK(hoop_fusion_join(fusion, &last, NULL, NULL, NULL) == HOOP_ERR_INVALID_ARGUMENT, "join without a handle");
  CHECK(hoop_fusion_join(fusion, NULL, NULL, NULL, &h) == HOOP_ERR_INVALID_ARGUMENT, "join without last_rank");
  CHECK(hoop_fusion_join(fusion, &last, NULL, NULL, &h) == HOOP_SUCCESS, "join");
  CHECK(hoop_fusion_wait(fusion, h) == HOOP_SUCCESS, "join result");
  CHECK(last == size - 1, "join: last %d, want %d", last, size - 1);
  CHECK(hoop_fusion_joined(fusion, &joined) == HOOP_SUCCESS && joined == 0, "joined after the join ended");

  /* The timeline started and stopped at run time: rank 0's file is a complete trace. */
  char path[64];
  snprintf(path, sizeof path, "/tmp/hoop-c-fusion-%d.json", (int)getpid());
  CHECK(hoop_fusion_start_timeline(fusion, NULL, 0) == HOOP_ERR_INVALID_ARGUMENT, "timeline without a path");
  CHECK(hoop_fusion_start_timeline(fusion, path, 1) == HOOP_SUCCESS, "start timeline");
  float tv[2] = {1, 2};
  CHECK(hoop_fusion_allreduce(fusion, "timed", tv, tv, 2, HOOP_F32, HOOP_SUM, NULL, NULL, NULL, &h) == HOOP_SUCCESS &&
            hoop_fusion_wait(fusion, h) == HOOP_SUCCESS,
        "timed allreduce");
  CHECK(hoop_fusion_stop_timeline(fusion) == HOOP_SUCCESS, "stop timeline");
  FILE* tf = fopen(path, "r");
  CHECK((tf != NULL) == (rank == 0), "rank 0 alone writes the timeline");
  if (tf) {
    char text[1 << 14];
    size_t got = fread(text, 1, sizeof text - 1, tf);
    text[got] = 0;
    fclose(tf);
    remove(path);
    CHECK(strstr(text, "\"timed\"") && strstr(text, "CYCLE_START") && got > 3 && !strcmp(text + got - 3, "\n]\n"),
          "timeline content: %s", text);
  }

  CHECK(hoop_fusion_stop(fusion) == HOOP_SUCCESS, "stop");
  CHECK(hoop_allreduce(comm, x, x, 4, HOOP_F32, HOOP_SUM) == HOOP_SUCCESS, "direct call after stop");
  CHECK(x[0] == (float)size, "direct result");

  /* The flight recorder names what the runtime ran (its tensors, its negotiation) and a call
   * named through the C API, that call only. */
  CHECK(hoop_comm_set_trace_name(comm, "c:named allreduce") == HOOP_SUCCESS, "name the next call");
  CHECK(hoop_allreduce(comm, x, x, 4, HOOP_F32, HOOP_SUM) == HOOP_SUCCESS, "named call");
  CHECK(hoop_barrier(comm) == HOOP_SUCCESS, "unnamed call");
  size_t need = 0;
  hoop_comm_trace(comm, NULL, 0, &need);
  char* trace = malloc(need);
  CHECK(hoop_comm_trace(comm, trace, need, &need) == HOOP_SUCCESS, "trace");
  CHECK(strstr(trace, "\"name\": \"tensor fusion: negotiation\"") != NULL, "the negotiation named");
  CHECK(strstr(trace, "grad/") != NULL, "the fused gradients named");
  CHECK(strstr(trace, "\"name\": \"params\"") != NULL && strstr(trace, "\"name\": \"ranks\"") != NULL,
        "the broadcast and allgather named");
  const char* named = strstr(trace, "\"name\": \"c:named allreduce\"");
  CHECK(named != NULL && strstr(named, "\"op\": \"barrier\"") != NULL &&
            strstr(strstr(named, "\"op\": \"barrier\""), "\"name\"") == NULL,
        "the named call, and the next one not");
  free(trace);
  free(all);
  CHECK(hoop_finalize(comm) == HOOP_SUCCESS, "finalize");
  printf("c-fusion ok rank %d of %d\n", rank, size);
  return 0;
}
