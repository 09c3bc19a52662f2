/* The C API from C, including only <hoop/hoop.h>: allreduce, broadcast, allgather,
 * reduce_scatter and barrier on small data, a compressed allreduce, bad arguments, error strings, and the
 * rank's locality and default GPU. Run as every rank
 * of a job (hooprun, mpirun, or Slurm-style environment). Prints "c-api ok rank R of N".
 * With C_API_EXPLICIT=1 it initialises with hoop_init(), passing rank, size, store and token
 * itself (read here from hooprun's variables, as a framework would pass its own). */
#include <hoop/hoop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_TAG "c-api"
#include "tests/launch/c_check.h"

int main(int argc, char** argv) {
  CheckUsage(argc, argv,
             "\n  (no arguments) the C API from C: collectives on small data, compression, bad arguments, error\n  "
             "strings, locality. Run as every rank of a job (hooprun -np N hoop-c-api-test); with\n  C_API_EXPLICIT=1 "
             "it calls hoop_init with hooprun's rank, size, store and token itself.");
  hoop_comm_t comm = NULL;
  hoop_status_t s;
  int version = -1;
  CHECK(hoop_get_version(&version) == HOOP_SUCCESS && version == HOOP_VERSION, "version %d, header %d", version,
        HOOP_VERSION);
  CHECK(HOOP_VERSION == HOOP_VERSION_CODE(HOOP_VERSION_MAJOR, HOOP_VERSION_MINOR, HOOP_VERSION_PATCH), "version code");
  CHECK(hoop_get_version(NULL) == HOOP_ERR_INVALID_ARGUMENT, "hoop_get_version(NULL) accepted");
  /* The dtype table: every enumerator up to HOOP_U64 is a row, the next is not. */
  {
    hoop_dtype_info_t info;
    int n = 0;
    while (hoop_dtype_info((hoop_dtype_t)n, &info) == HOOP_SUCCESS) ++n;
    CHECK(n == HOOP_U64 + 1, "hoop_dtype_info knows %d dtypes", n);
    CHECK(strstr(hoop_last_error(), "unknown dtype") != NULL, "message: %s", hoop_last_error());
    CHECK(hoop_dtype_info(HOOP_F8E4M3, &info) == HOOP_SUCCESS && strcmp(info.name, "f8e4m3") == 0 &&
              strcmp(info.c_name, "F8E4M3") == 0 && info.size == 1 && info.is_float &&
              info.ops ==
                  ((1u << HOOP_SUM) | (1u << HOOP_AVG) | (1u << HOOP_MIN) | (1u << HOOP_MAX) | (1u << HOOP_PROD)) &&
              strcmp(info.torch, "float8_e4m3fn") == 0 && strcmp(info.aten, "Float8_e4m3fn") == 0,
          "f8e4m3's row: %s %s %zu %d %x %s %s", info.name, info.c_name, info.size, info.is_float, info.ops, info.torch,
          info.aten);
    CHECK(hoop_dtype_info(HOOP_BOOL, &info) == HOOP_SUCCESS && !info.is_float && (info.ops & (1u << HOOP_BXOR)) &&
              !(info.ops & (1u << HOOP_SUM)),
          "bool's row: ops %x", info.ops);
    CHECK(hoop_dtype_info(HOOP_F32, NULL) == HOOP_ERR_INVALID_ARGUMENT, "NULL info accepted");
    CHECK(hoop_dtype_info((hoop_dtype_t)-1, &info) == HOOP_ERR_INVALID_ARGUMENT, "dtype -1 accepted");
  }
  const char* explicit_init = getenv("C_API_EXPLICIT");
  if (explicit_init && strcmp(explicit_init, "1") == 0) {
    CHECK(hoop_init(&comm, 0, 0, "tcp://127.0.0.1:1", NULL) == HOOP_ERR_INVALID_ARGUMENT, "size 0 accepted");
    s = hoop_init(&comm, atoi(getenv("HOOP_RANK")), atoi(getenv("HOOP_SIZE")), getenv("HOOP_STORE"),
                  getenv("HOOP_JOB_TOKEN"));
  } else {
    s = hoop_init_from_env(&comm);
  }
  CHECK(s == HOOP_SUCCESS, "init: %s", hoop_status_string(s));
  int rank = -1, size = -1, lrank = -1, lsize = -1;
  CHECK(hoop_rank(comm, &rank) == HOOP_SUCCESS && hoop_size(comm, &size) == HOOP_SUCCESS, "rank/size");
  CHECK(hoop_local_rank(comm, &lrank) == HOOP_SUCCESS && hoop_local_size(comm, &lsize) == HOOP_SUCCESS, "local");
  CHECK(lrank >= 0 && lrank < lsize, "local rank %d of %d", lrank, lsize);

  /* Locality: the JSON, its size asked first; the default GPU where there is one. */
  size_t need = 0;
  CHECK(hoop_locality(comm, NULL, 0, &need) == HOOP_ERR_INVALID_ARGUMENT && need > 2, "locality size %zu", need);
  CHECK(strstr(hoop_last_error(), "hoop_locality: the text needs") != NULL, "locality error");
  char* loc = (char*)malloc(need);
  CHECK(loc && hoop_locality(comm, loc, need, NULL) == HOOP_SUCCESS && strlen(loc) + 1 == need, "locality");
  char want_rank[32];
  snprintf(want_rank, sizeof want_rank, "\"rank\":%d", rank);
  CHECK(strstr(loc, want_rank) && strstr(loc, "\"bound_cpus\":") && strstr(loc, "\"nics\":["), "locality %s", loc);
  int dev = -1;
  s = hoop_local_device(comm, &dev);
  if (s == HOOP_SUCCESS)
    CHECK(dev >= 0 && strstr(loc, "\"gpu\":{"), "device %d, %s", dev, loc);
  else
    CHECK((s == HOOP_ERR_UNAVAILABLE || s == HOOP_ERR_UNIMPLEMENTED) && strstr(loc, "\"gpu\":null") &&
              strstr(loc, "\"gpu_why\":") && strstr(hoop_last_error(), "hoop_local_device"),
          "local device: %s; %s", hoop_status_string(s), loc);
  CHECK(hoop_local_device(comm, NULL) == HOOP_ERR_INVALID_ARGUMENT, "hoop_local_device(NULL) accepted");
  if (rank == 0) printf("c-api locality: %s\n", loc);
  free(loc);

  enum { N = 1001 };
  static float in[N], out[N];
  for (int i = 0; i < N; ++i) in[i] = (float)(rank + i % 7);
  CHECK(hoop_allreduce(comm, in, out, N, HOOP_F32, HOOP_SUM) == HOOP_SUCCESS, "allreduce");
  for (int i = 0; i < N; ++i) {
    float want = (float)(size * (size - 1) / 2 + size * (i % 7));
    CHECK(out[i] == want, "allreduce[%d] = %f, want %f", i, out[i], want);
  }
  CHECK(hoop_allreduce(comm, in, in, N, HOOP_F32, HOOP_MAX) == HOOP_SUCCESS, "allreduce in place");
  CHECK(in[0] == (float)(size - 1), "max");

  long long b[3] = {0, 0, 0};
  if (rank == size - 1) b[0] = 42, b[1] = -1, b[2] = 7;
  CHECK(hoop_broadcast(comm, rank == size - 1 ? b : NULL, b, 3, HOOP_I64, size - 1) == HOOP_SUCCESS, "broadcast");
  CHECK(b[0] == 42 && b[1] == -1 && b[2] == 7, "broadcast values");

  int mine[2] = {rank, rank * 10};
  int* all = malloc(sizeof(int) * 2 * (size_t)size);
  CHECK(hoop_allgather(comm, mine, all, 2, HOOP_I32) == HOOP_SUCCESS, "allgather");
  for (int r = 0; r < size; ++r) CHECK(all[2 * r] == r && all[2 * r + 1] == r * 10, "allgather block %d", r);

  double* rs_in = malloc(sizeof(double) * 3 * (size_t)size);
  double rs_out[3];
  for (int i = 0; i < 3 * size; ++i) rs_in[i] = i;
  CHECK(hoop_reduce_scatter(comm, rs_in, rs_out, 3, HOOP_F64, HOOP_AVG) == HOOP_SUCCESS, "reduce_scatter");
  for (int i = 0; i < 3; ++i) CHECK(rs_out[i] == (double)(rank * 3 + i), "reduce_scatter[%d]", i);

  CHECK(hoop_barrier(comm) == HOOP_SUCCESS, "barrier");

  /* Compressed allreduce with error feedback: inside the header's bound; bf16 on integers refused. */
  {
    static float x[N], y[N], residual[N];
    for (int i = 0; i < N; ++i) x[i] = (float)((i % 2 ? -1.0 : 1.0) * (1.0 + rank) * (i + 0.3) * 97.1);
    hoop_allreduce_opts_t zo = {HOOP_COMPRESSION_FP16, residual};
    CHECK(hoop_allreduce_ex(comm, x, y, N, HOOP_F32, HOOP_SUM, &zo) == HOOP_SUCCESS, "fp16 allreduce");
    const double g = hoop_compression_error_factor(HOOP_COMPRESSION_FP16, size);
    CHECK(size == 1 || g > 0, "error factor %g", g);
    double m = 0;
    for (int i = 0; i < N; ++i) m = m > (i + 0.3) * 97.1 ? m : (i + 0.3) * 97.1;
    for (int i = 0; i < N; ++i) {
      const double a = (i + 0.3) * 97.1 * size * (size + 1) / 2.0; /* sum of |x| over ranks */
      const double want = (i % 2 ? -a : a), err = y[i] - want;
      CHECK((err < 0 ? -err : err) <= g * (a + m * size * (size + 1) / 2.0 / 16777216.0) + a * 1e-6,
            "fp16 allreduce[%d] = %f, want %f", i, y[i], want);
    }
    zo.compression = HOOP_COMPRESSION_BF16;
    zo.residual = NULL;
    CHECK(hoop_allreduce_ex(comm, mine, mine, 2, HOOP_I32, HOOP_SUM, &zo) == HOOP_ERR_INVALID_ARGUMENT, "bf16 on i32");
    CHECK(strstr(hoop_last_error(), "compression bf16") != NULL, "message: %s", hoop_last_error());
    CHECK(hoop_allreduce_ex(comm, x, y, N, HOOP_F32, HOOP_SUM, NULL) == HOOP_SUCCESS, "allreduce_ex without options");
  }

  /* A call on a CUDA stream (host memory, the legacy default stream): where there is a device it
   * is queued and a later blocking call finds it done; where there is none, or no CUDA in the
   * build, it is refused at once, naming why. */
  {
    float sx[3] = {1, 2, 3}, sy[3] = {0, 0, 0};
    hoop_status_t st = hoop_allreduce_stream(comm, sx, sy, 3, HOOP_F32, HOOP_SUM, NULL);
    if (st == HOOP_SUCCESS) {
      CHECK(hoop_barrier(comm) == HOOP_SUCCESS, "barrier after a stream call");
      CHECK(sy[0] == (float)size && sy[2] == (float)(3 * size), "stream allreduce: %f %f", sy[0], sy[2]);
    } else {
      CHECK(strstr(hoop_last_error(), "hoop_allreduce_stream") != NULL &&
                strstr(hoop_last_error(), "a CUDA stream was given, but: ") != NULL,
            "stream refusal: %s", hoop_last_error());
      CHECK(sy[0] == 0, "a refused stream call wrote its output");
    }
    /* The same for a send and a receive on a stream (to itself: the values are the GPU tests'). */
    int v[2] = {1, 2}, w[2] = {0, 0};
    st = hoop_send_stream(comm, v, 2, HOOP_I32, rank, 77, NULL);
    if (st == HOOP_SUCCESS) {
      CHECK(hoop_recv_stream(comm, w, 2, HOOP_I32, rank, 77, NULL) == HOOP_SUCCESS, "recv_stream: %s",
            hoop_last_error());
      CHECK(hoop_barrier(comm) == HOOP_SUCCESS, "barrier after stream sends");
    } else {
      CHECK(strstr(hoop_last_error(), "hoop_send_stream") != NULL &&
                strstr(hoop_last_error(), "a CUDA stream was given, but: ") != NULL,
            "send_stream refusal: %s", hoop_last_error());
      CHECK(hoop_recv_stream(comm, w, 2, HOOP_I32, rank, 77, NULL) != HOOP_SUCCESS, "recv_stream accepted");
      CHECK(strstr(hoop_last_error(), "hoop_recv_stream") != NULL, "recv_stream refusal: %s", hoop_last_error());
    }
  }

  /* Bad input: a clear status and message, nothing sent. */
  CHECK(hoop_broadcast(comm, b, b, 3, HOOP_I64, size) == HOOP_ERR_INVALID_ARGUMENT, "bad root accepted");
  CHECK(strstr(hoop_last_error(), "root") != NULL, "message should name the root: %s", hoop_last_error());
  CHECK(hoop_allreduce(comm, NULL, out, 5, HOOP_F32, HOOP_SUM) == HOOP_ERR_INVALID_ARGUMENT, "NULL accepted");
  CHECK(hoop_allreduce(comm, in, out, 5, (hoop_dtype_t)99, HOOP_SUM) == HOOP_ERR_INVALID_ARGUMENT, "bad dtype");
  CHECK(strcmp(hoop_status_string(HOOP_ERR_TIMEOUT), "timed out") == 0, "status string");
  /* Still usable after rejected calls. */
  CHECK(hoop_barrier(comm) == HOOP_SUCCESS, "barrier after bad calls");

  free(all);
  free(rs_in);
  CHECK(hoop_finalize(comm) == HOOP_SUCCESS, "finalize");
  printf("c-api ok rank %d of %d\n", rank, size);
  return 0;
}
