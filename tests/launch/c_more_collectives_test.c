/* The C API's reduce, gather, scatter and alltoall from C, including only <hoop/hoop.h>: every
 * root in turn, counts 0, 1, 7 and a large odd one, non-roots passing NULL for the buffers they do
 * not use, the in-place forms, the nonblocking forms completed with hoop_wait_all, HOOP_I8,
 * HOOP_BOOL and the bitwise ops (and what they refuse), HOOP_F8E4M3 and HOOP_F8E5M2, allgatherv, reduce_scatterv and alltoallv
 * with uneven counts and gapped layouts, and bad calls
 * (root out of range, a root's NULL buffer, an alltoall count that is not a multiple of the ranks)
 * refused with a message naming the call. Run as every rank of a job (hooprun).
 * Prints "c-more-collectives ok rank R of N". */
#include <hoop/hoop.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_TAG "c-more-collectives"
#include "tests/launch/c_check.h"

/* Rank r's element i of call c: distinct per rank and element, exact in i64 and f64. */
static long long Value(int rank, size_t i, int c) { return (long long)rank * 1000003 + (long long)(i % 9973) * 7 + c; }

static const size_t kCounts[] = {0, 1, 7, 50001};
enum { kNumCounts = sizeof kCounts / sizeof kCounts[0] };

static void Reduce(hoop_comm_t comm, int rank, int size, int root, size_t n, int c) {
  long long* in = malloc(sizeof(long long) * (n + 1));
  long long* out = malloc(sizeof(long long) * (n + 1));
  for (size_t i = 0; i < n; ++i) in[i] = Value(rank, i, c), out[i] = -1;
  /* Non-roots pass NULL for the output they do not get. */
  CHECK(hoop_reduce(comm, in, rank == root ? out : NULL, n, HOOP_I64, HOOP_MAX, root) == HOOP_SUCCESS,
        "reduce count %zu root %d", n, root);
  if (rank == root)
    for (size_t i = 0; i < n; ++i) CHECK(out[i] == Value(size - 1, i, c), "reduce element %zu: %lld", i, out[i]);
  /* In place at the root. */
  for (size_t i = 0; i < n; ++i) in[i] = Value(rank, i, c);
  CHECK(hoop_reduce(comm, in, rank == root ? in : NULL, n, HOOP_I64, HOOP_SUM, root) == HOOP_SUCCESS,
        "in-place reduce count %zu root %d", n, root);
  if (rank == root)
    for (size_t i = 0; i < n; ++i) {
      long long want = 0;
      for (int r = 0; r < size; ++r) want += Value(r, i, c);
      CHECK(in[i] == want, "in-place reduce element %zu: %lld, want %lld", i, in[i], want);
    }
  free(in);
  free(out);
}

static void GatherScatter(hoop_comm_t comm, int rank, int size, int root, size_t n, int c) {
  size_t all = n * (size_t)size;
  double* mine = malloc(sizeof(double) * (n + 1));
  double* whole = malloc(sizeof(double) * (all + 1));
  for (size_t i = 0; i < n; ++i) mine[i] = (double)Value(rank, i, c);
  for (size_t i = 0; i < all; ++i) whole[i] = -1;
  CHECK(hoop_gather(comm, mine, rank == root ? whole : NULL, n, HOOP_F64, root) == HOOP_SUCCESS,
        "gather count %zu root %d", n, root);
  if (rank == root)
    for (int r = 0; r < size; ++r)
      for (size_t i = 0; i < n; ++i)
        CHECK(whole[(size_t)r * n + i] == (double)Value(r, i, c), "gather block %d element %zu", r, i);
  /* Scatter the root's gathered blocks back: each rank gets its own input again, in place at the
   * root (its output is its own block of the input); non-roots pass NULL as the input. */
  for (size_t i = 0; i < n; ++i) mine[i] = -1;
  double* dst = rank == root ? whole + (size_t)rank * n : mine;
  CHECK(hoop_scatter(comm, rank == root ? whole : NULL, dst, n, HOOP_F64, root) == HOOP_SUCCESS,
        "scatter count %zu root %d", n, root);
  for (size_t i = 0; i < n; ++i) CHECK(dst[i] == (double)Value(rank, i, c), "scatter element %zu: %f", i, dst[i]);
  free(mine);
  free(whole);
}

static void Alltoall(hoop_comm_t comm, int rank, int size, size_t n, int c) {
  size_t all = n * (size_t)size;
  int* in = malloc(sizeof(int) * (all + 1));
  int* out = malloc(sizeof(int) * (all + 1));
  /* Block p of rank r's input, element i: r * 100000 + p * 1000 + i % 1000. */
  for (int p = 0; p < size; ++p)
    for (size_t i = 0; i < n; ++i) in[(size_t)p * n + i] = rank * 100000 + p * 1000 + (int)(i % 1000) + c;
  CHECK(hoop_alltoall(comm, in, out, n, HOOP_I32) == HOOP_SUCCESS, "alltoall count %zu", n);
  for (int r = 0; r < size; ++r)
    for (size_t i = 0; i < n; ++i)
      CHECK(out[(size_t)r * n + i] == r * 100000 + rank * 1000 + (int)(i % 1000) + c, "alltoall block %d element %zu",
            r, i);
  CHECK(hoop_alltoall(comm, in, in, n, HOOP_I32) == HOOP_SUCCESS, "in-place alltoall count %zu", n);
  CHECK(all == 0 || memcmp(in, out, sizeof(int) * all) == 0, "in-place alltoall differs from out of place");
  free(in);
  free(out);
}

int main(int argc, char** argv) {
  CheckUsage(argc, argv,
             "\n  (no arguments) reduce, gather, scatter, alltoall and the v-collectives from C at every root and\n  "
             "odd counts. Run as every rank of a job (hooprun -np N hoop-c-more-collectives-test).");
  hoop_comm_t comm = NULL;
  CHECK(hoop_init_from_env(&comm) == HOOP_SUCCESS, "init");
  int rank = -1, size = -1;
  CHECK(hoop_rank(comm, &rank) == HOOP_SUCCESS && hoop_size(comm, &size) == HOOP_SUCCESS, "rank/size");

  int c = 0;
  for (int k = 0; k < kNumCounts; ++k) {
    for (int root = 0; root < size; ++root, ++c) {
      Reduce(comm, rank, size, root, kCounts[k], c);
      GatherScatter(comm, rank, size, root, kCounts[k], c);
    }
    Alltoall(comm, rank, size, kCounts[k], c++);
  }

  /* The nonblocking forms, all in flight at once, completed together. */
  {
    const int root = size / 2;
    float x = (float)(rank + 1), sum = 0;
    short* g = malloc(sizeof(short) * 2 * (size_t)size);
    short mine[2] = {(short)rank, (short)-rank};
    unsigned char* s_in = malloc((size_t)size * 3);
    for (int i = 0; i < size * 3; ++i) s_in[i] = (unsigned char)i;
    unsigned char s_out[3] = {0, 0, 0};
    long long* a_in = malloc(sizeof(long long) * (size_t)size);
    long long* a_out = malloc(sizeof(long long) * (size_t)size);
    for (int p = 0; p < size; ++p) a_in[p] = (long long)rank * size + p;
    hoop_request_t rq[4] = {NULL, NULL, NULL, NULL};
    CHECK(hoop_ireduce(comm, &x, &sum, 1, HOOP_F32, HOOP_SUM, root, &rq[0]) == HOOP_SUCCESS, "ireduce");
    CHECK(hoop_igather(comm, mine, g, 2, HOOP_F16, root, &rq[1]) == HOOP_SUCCESS, "igather");
    CHECK(hoop_iscatter(comm, s_in, s_out, 3, HOOP_U8, root, &rq[2]) == HOOP_SUCCESS, "iscatter");
    CHECK(hoop_ialltoall(comm, a_in, a_out, 1, HOOP_I64, &rq[3]) == HOOP_SUCCESS, "ialltoall");
    CHECK(hoop_wait_all(rq, 4) == HOOP_SUCCESS, "wait_all");
    if (rank == root) {
      CHECK(sum == (float)(size * (size + 1) / 2), "ireduce %f", sum);
      for (int r = 0; r < size; ++r)
        CHECK(g[2 * r] == r && g[2 * r + 1] == -r, "igather block %d (f16 moved bit for bit)", r);
    }
    for (int i = 0; i < 3; ++i) CHECK(s_out[i] == (unsigned char)(rank * 3 + i), "iscatter element %d", i);
    for (int r = 0; r < size; ++r) CHECK(a_out[r] == (long long)r * size + rank, "ialltoall block %d", r);
    free(g);
    free(s_in);
    free(a_in);
    free(a_out);
  }

  /* allgatherv, reduce_scatterv, alltoallv: uneven counts (every third rank's block empty), the
   * receive blocks in reverse rank order with gaps, and their nonblocking forms. */
  {
    size_t* counts = malloc(sizeof(size_t) * (size_t)size);
    size_t* displs = malloc(sizeof(size_t) * (size_t)size);
    size_t extent = 0, total = 0;
    for (int r = size - 1; r >= 0; --r) {
      counts[r] = r % 3 == 1 ? 0 : (size_t)(2 * r + 1);
      displs[r] = extent + 1;
      extent += counts[r] + 1;
      total += counts[r];
    }
    /* allgatherv: rank r's block holds r * 100 + i. */
    int* mine = malloc(sizeof(int) * (counts[rank] + 1));
    int* all = malloc(sizeof(int) * (extent + 1));
    for (size_t i = 0; i < counts[rank]; ++i) mine[i] = rank * 100 + (int)i;
    for (size_t i = 0; i <= extent; ++i) all[i] = -7;
    CHECK(hoop_allgatherv(comm, mine, counts[rank], all, counts, displs, HOOP_I32) == HOOP_SUCCESS, "allgatherv");
    for (int r = 0; r < size; ++r)
      for (size_t i = 0; i < counts[r]; ++i)
        CHECK(all[displs[r] + i] == r * 100 + (int)i, "allgatherv block %d element %zu: %d", r, i, all[displs[r] + i]);
    CHECK(all[0] == -7, "allgatherv wrote a gap");
    /* reduce_scatterv: every rank sends element j = rank + j; rank r gets its block summed. */
    long long* rs_in = malloc(sizeof(long long) * (total + 1));
    long long* rs_out = malloc(sizeof(long long) * (counts[rank] + 1));
    for (size_t j = 0; j < total; ++j) rs_in[j] = rank + (long long)j;
    hoop_request_t rq[2] = {NULL, NULL};
    CHECK(hoop_ireduce_scatterv(comm, rs_in, rs_out, counts, HOOP_I64, HOOP_SUM, &rq[0]) == HOOP_SUCCESS,
          "ireduce_scatterv");
    /* alltoallv: rank k sends rank p (k + p) % 4 elements, k * 1000 + p * 10 + i, packed. */
    size_t* sc = malloc(sizeof(size_t) * (size_t)size);
    size_t* sd = malloc(sizeof(size_t) * (size_t)size);
    size_t* rc = malloc(sizeof(size_t) * (size_t)size);
    size_t* rd = malloc(sizeof(size_t) * (size_t)size);
    size_t s_total = 0, r_total = 0;
    for (int p = 0; p < size; ++p) {
      sc[p] = (size_t)((rank + p) % 4), sd[p] = s_total, s_total += sc[p];
      rc[p] = (size_t)((p + rank) % 4), rd[p] = r_total + 3, r_total += rc[p] + 3; /* gaps of 3 */
    }
    int* a_in = malloc(sizeof(int) * (s_total + 1));
    int* a_out = malloc(sizeof(int) * (r_total + 1));
    for (int p = 0; p < size; ++p)
      for (size_t i = 0; i < sc[p]; ++i) a_in[sd[p] + i] = rank * 1000 + p * 10 + (int)i;
    CHECK(hoop_ialltoallv(comm, a_in, sc, sd, a_out, rc, rd, HOOP_I32, &rq[1]) == HOOP_SUCCESS, "ialltoallv");
    CHECK(hoop_wait_all(rq, 2) == HOOP_SUCCESS, "wait_all v");
    size_t at = 0;
    for (int r = 0; r < rank; ++r) at += counts[r];
    for (size_t i = 0; i < counts[rank]; ++i) {
      long long want = 0;
      for (int r = 0; r < size; ++r) want += r + (long long)(at + i);
      CHECK(rs_out[i] == want, "reduce_scatterv element %zu: %lld, want %lld", i, rs_out[i], want);
    }
    for (int k = 0; k < size; ++k)
      for (size_t i = 0; i < rc[k]; ++i)
        CHECK(a_out[rd[k] + i] == k * 1000 + rank * 10 + (int)i, "alltoallv from %d element %zu: %d", k, i,
              a_out[rd[k] + i]);
    /* Bad layouts are refused, naming the call and the argument. */
    CHECK(hoop_allgatherv(comm, mine, counts[rank], all, NULL, displs, HOOP_I32) == HOOP_ERR_INVALID_ARGUMENT,
          "NULL counts");
    CHECK(
        strstr(hoop_last_error(), "hoop_allgatherv") != NULL && strstr(hoop_last_error(), "recvcounts is NULL") != NULL,
        "message: %s", hoop_last_error());
    int q = size - 1;
    while (q > 0 && counts[q] == 0) --q; /* an empty block overlaps nothing */
    if (q > 0 && counts[0] > 0) {
      size_t save = displs[0];
      displs[0] = displs[q]; /* rank 0's block onto rank q's */
      CHECK(hoop_allgatherv(comm, mine, counts[rank], all, counts, displs, HOOP_I32) == HOOP_ERR_INVALID_ARGUMENT,
            "overlapping blocks accepted");
      CHECK(strstr(hoop_last_error(), "overlap") != NULL, "message: %s", hoop_last_error());
      displs[0] = save;
    }
    CHECK(hoop_allgatherv(comm, mine, counts[rank] + 1, all, counts, displs, HOOP_I32) == HOOP_ERR_INVALID_ARGUMENT,
          "sendcount differing from recvcounts[rank] accepted");
    CHECK(strstr(hoop_last_error(), "differs from this rank's count") != NULL, "message: %s", hoop_last_error());
    free(counts), free(displs), free(mine), free(all), free(rs_in), free(rs_out);
    free(sc), free(sd), free(rc), free(rd), free(a_in), free(a_out);
  }

  /* i8 and bool, and the bitwise ops on the integer types. */
  {
    signed char i8[3] = {(signed char)(rank - 1), (signed char)(100 + rank), (signed char)-rank}, i8_out[3];
    CHECK(hoop_allreduce(comm, i8, i8_out, 3, HOOP_I8, HOOP_MIN) == HOOP_SUCCESS, "i8 min");
    CHECK(i8_out[0] == -1 && i8_out[1] == 100 && i8_out[2] == (signed char)-(size - 1), "i8 min values %d %d %d",
          i8_out[0], i8_out[1], i8_out[2]);
    CHECK(hoop_allreduce(comm, i8, i8_out, 3, HOOP_I8, HOOP_SUM) == HOOP_SUCCESS, "i8 sum");
    int want1 = 0;
    for (int r = 0; r < size; ++r) want1 += 100 + r;
    CHECK(i8_out[1] == (signed char)want1, "i8 sum wraps: %d, want %d", i8_out[1], (signed char)want1);
    /* The 16-bit and the unsigned 32- and 64-bit integers: unsigned order and wrapping. */
    int16_t i16 = (int16_t)(32767 - rank), i16_out = 0;
    CHECK(hoop_allreduce(comm, &i16, &i16_out, 1, HOOP_I16, HOOP_SUM) == HOOP_SUCCESS, "i16 sum");
    int16_t want16 = 0;
    for (int r = 0; r < size; ++r) want16 = (int16_t)(uint16_t)((uint16_t)want16 + (uint16_t)(32767 - r));
    CHECK(i16_out == want16, "i16 sum wraps: %d, want %d", i16_out, want16);
    uint16_t u16 = (uint16_t)(65535 - rank), u16_out = 0;
    CHECK(hoop_allreduce(comm, &u16, &u16_out, 1, HOOP_U16, HOOP_MIN) == HOOP_SUCCESS, "u16 min");
    CHECK(u16_out == (uint16_t)(65536 - size), "u16 min %u", (unsigned)u16_out);
    uint32_t u32 = rank == size - 1 ? 0x80000000u : (uint32_t)rank, u32_out = 0;
    CHECK(hoop_allreduce(comm, &u32, &u32_out, 1, HOOP_U32, HOOP_MAX) == HOOP_SUCCESS, "u32 max");
    CHECK(u32_out == 0x80000000u, "u32 max %x (ordered as signed?)", u32_out);
    uint64_t u64[2] = {UINT64_MAX, (uint64_t)1 << (32 + rank)}, u64_out[2];
    CHECK(hoop_allreduce(comm, u64, u64_out, 2, HOOP_U64, HOOP_SUM) == HOOP_SUCCESS, "u64 sum");
    uint64_t or64 = 0;
    for (int r = 0; r < size; ++r) or64 += (uint64_t)1 << (32 + r);
    CHECK(u64_out[0] == (uint64_t)0 - (uint64_t)size && u64_out[1] == or64, "u64 sum %llx %llx",
          (unsigned long long)u64_out[0], (unsigned long long)u64_out[1]);
    /* bool: rank 0 alone holds a true in [0]; every rank holds one in [1]; [2] alternates. */
    unsigned char b[3] = {(unsigned char)(rank == 0), 1, (unsigned char)(rank % 2)}, any[3], all[3], odd[3];
    CHECK(hoop_allreduce(comm, b, any, 3, HOOP_BOOL, HOOP_BOR) == HOOP_SUCCESS, "bool bor");
    CHECK(hoop_allreduce(comm, b, all, 3, HOOP_BOOL, HOOP_BAND) == HOOP_SUCCESS, "bool band");
    CHECK(hoop_allreduce(comm, b, odd, 3, HOOP_BOOL, HOOP_BXOR) == HOOP_SUCCESS, "bool bxor");
    CHECK(any[0] == 1 && any[1] == 1 && any[2] == (size > 1), "bool bor %d %d %d", any[0], any[1], any[2]);
    CHECK(all[0] == (size == 1) && all[1] == 1 && all[2] == 0, "bool band %d %d %d", all[0], all[1], all[2]);
    CHECK(odd[0] == 1 && odd[1] == (size % 2) && odd[2] == ((size / 2) % 2), "bool bxor %d %d %d", odd[0], odd[1],
          odd[2]);
    /* Bitwise on i64 and i32: bit r set by rank r. */
    long long bit = 1LL << (40 + rank), bits = 0;
    CHECK(hoop_reduce(comm, &bit, &bits, 1, HOOP_I64, HOOP_BOR, 0) == HOOP_SUCCESS, "i64 bor reduce");
    if (rank == 0) CHECK(bits == (((1LL << size) - 1) << 40), "i64 bor %llx", (unsigned long long)bits);
    int mask = ~(1 << rank), masked = 0;
    CHECK(hoop_allreduce(comm, &mask, &masked, 1, HOOP_I32, HOOP_BAND) == HOOP_SUCCESS, "i32 band");
    CHECK(masked == ~((1 << size) - 1), "i32 band %x", (unsigned)masked);
    /* What does not apply is refused, naming the op and the type. */
    float f = 1;
    CHECK(hoop_allreduce(comm, &f, &f, 1, HOOP_F32, HOOP_BXOR) == HOOP_ERR_INVALID_ARGUMENT, "f32 bxor accepted");
    CHECK(strstr(hoop_last_error(), "bxor takes integer and bool elements, not f32") != NULL, "message: %s",
          hoop_last_error());
    CHECK(hoop_allreduce(comm, b, any, 3, HOOP_BOOL, HOOP_SUM) == HOOP_ERR_INVALID_ARGUMENT, "bool sum accepted");
    CHECK(strstr(hoop_last_error(), "bool takes min, max, band, bor and bxor, not sum") != NULL, "message: %s",
          hoop_last_error());
    CHECK(hoop_allreduce(comm, &f, &f, 1, HOOP_F32, (hoop_op_t)8) == HOOP_ERR_INVALID_ARGUMENT, "op 8 accepted");
    CHECK(hoop_allreduce(comm, &f, &f, 1, (hoop_dtype_t)(HOOP_U64 + 1), HOOP_SUM) == HOOP_ERR_INVALID_ARGUMENT,
          "dtype past HOOP_U64 accepted");
  }

  /* The 8-bit floats: bytes in, bytes out. e4m3 1.0 is 0x38, 2.0 0x40, 448 (its largest) 0x7e;
   * e5m2 1.0 is 0x3c, 57344 (its largest) 0x7b. Sums past the largest saturate, as NCCL's. */
  {
    unsigned char one4[2] = {0x38, 0x7e}, sum4[2], one5[2] = {0x3c, 0x7b}, sum5[2], mx[1], r8 = (unsigned char)rank;
    CHECK(hoop_allreduce(comm, one4, sum4, 2, HOOP_F8E4M3, HOOP_SUM) == HOOP_SUCCESS, "f8e4m3 sum");
    CHECK(hoop_allreduce(comm, one5, sum5, 2, HOOP_F8E5M2, HOOP_SUM) == HOOP_SUCCESS, "f8e5m2 sum");
    /* size ranks of 1.0: exact up to 16 in e4m3 and 8 in e5m2 (the test runs on at most 8). */
    static const unsigned char e4m3_int[9] = {0, 0x38, 0x40, 0x44, 0x48, 0x4a, 0x4c, 0x4e, 0x50};
    static const unsigned char e5m2_int[9] = {0, 0x3c, 0x40, 0x42, 0x44, 0x45, 0x46, 0x47, 0x48};
    if (size <= 8) {
      CHECK(sum4[0] == e4m3_int[size], "f8e4m3 sum of %d ones: 0x%02x, want 0x%02x", size, sum4[0], e4m3_int[size]);
      CHECK(sum5[0] == e5m2_int[size], "f8e5m2 sum of %d ones: 0x%02x, want 0x%02x", size, sum5[0], e5m2_int[size]);
    }
    CHECK(sum4[1] == 0x7e && sum5[1] == 0x7b, "saturating sums: 0x%02x 0x%02x", sum4[1], sum5[1]);
    /* max of rank as e4m3's small positive codes (monotone in the code): the largest rank's. */
    CHECK(hoop_allreduce(comm, &r8, mx, 1, HOOP_F8E4M3, HOOP_MAX) == HOOP_SUCCESS, "f8e4m3 max");
    CHECK(mx[0] == (unsigned char)(size - 1), "f8e4m3 max: 0x%02x", mx[0]);
    CHECK(hoop_allreduce(comm, one4, sum4, 1, HOOP_F8E4M3, HOOP_BOR) == HOOP_ERR_INVALID_ARGUMENT, "f8 bor accepted");
    CHECK(strstr(hoop_last_error(), "bor takes integer and bool elements, not f8e4m3") != NULL, "message: %s",
          hoop_last_error());
  }

  /* Bad calls: refused on every rank alike, naming the call and the argument. */
  {
    int x[64] = {0}, y[64] = {0};
    CHECK(hoop_reduce(comm, x, y, 1, HOOP_I32, HOOP_SUM, size) == HOOP_ERR_INVALID_ARGUMENT, "root = size");
    CHECK(strstr(hoop_last_error(), "hoop_reduce") != NULL && strstr(hoop_last_error(), "root") != NULL, "message: %s",
          hoop_last_error());
    CHECK(hoop_gather(comm, x, y, 1, HOOP_I32, -1) == HOOP_ERR_INVALID_ARGUMENT, "root -1");
    CHECK(strstr(hoop_last_error(), "hoop_gather") != NULL, "message: %s", hoop_last_error());
    if (rank == 0) { /* a root's NULL buffer is the root's own error */
      CHECK(hoop_scatter(comm, NULL, y, 1, HOOP_I32, 0) == HOOP_ERR_INVALID_ARGUMENT, "root's NULL input");
      CHECK(strstr(hoop_last_error(), "hoop_scatter") != NULL && strstr(hoop_last_error(), "input") != NULL,
            "message: %s", hoop_last_error());
    }
    CHECK(hoop_alltoall(comm, x, y, (size_t)-1 / 2, HOOP_I32) == HOOP_ERR_INVALID_ARGUMENT, "huge alltoall");
    hoop_request_t r = (hoop_request_t)1;
    CHECK(hoop_igather(comm, x, y, 1, HOOP_I32, size, &r) == HOOP_ERR_INVALID_ARGUMENT && r == NULL,
          "igather root = size");
    CHECK(strstr(hoop_last_error(), "hoop_igather") != NULL, "message: %s", hoop_last_error());
    /* The communicator still works after refused calls. */
    CHECK(hoop_barrier(comm) == HOOP_SUCCESS, "barrier after bad calls");
  }
  CHECK(hoop_finalize(comm) == HOOP_SUCCESS, "finalize");
  printf("c-more-collectives ok rank %d of %d\n", rank, size);
  return 0;
}
