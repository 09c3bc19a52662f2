/* hoop: the stable C API.
 *
 * Link with -lhoop. Every function returns a hoop_status_t; HOOP_SUCCESS is 0. After a failure,
 * hoop_last_error() gives the full message for the calling thread (it names the rank, the
 * operation and the cause), and hoop_status_string() names the code.
 *
 * Thread safety: distinct communicators are independent. Calls on one communicator may come from
 * any thread and are executed one at a time in the order they arrive; since every rank must
 * issue the same collectives in the same order, a program that calls from several threads must
 * order those calls itself. hoop_finalize must not race with other calls on the same
 * communicator. hoop_last_error is per thread.
 *
 * Buffers may be host memory or, where hoop is built with CUDA and a device is present, CUDA
 * device memory (found from the pointer): between ranks on one host it moves by CUDA IPC and is
 * reduced on the device (HOOP_CUDA_IPC=0: staged through pinned host memory), across hosts it is
 * staged through pinned host memory, or moved by UCX where UCX moves device memory itself.
 * A plain call on device memory completes with the output in device memory; the *_stream calls
 * order a collective on a CUDA stream instead (below).
 * The tensor fusion calls (hoop_fusion_*, in hoop/hoop_fusion.h, which this header includes) may
 * be made from any threads at once.
 * Every call without an i (hoop_allreduce) blocks until the operation is complete on this rank, or fails; no
 * operation takes longer than HOOP_TIMEOUT seconds (default 300; hoop_init_store_timeout gives a communicator its
 * own). The nonblocking forms (hoop_iallreduce, below) return a request at once.
 *
 * Bad calls are refused with HOOP_ERR_INVALID_ARGUMENT and a message naming rank, call and
 * argument, and nothing is sent: counts whose size in bytes (or count x ranks) does not fit in
 * 64 bits or in memory, unknown dtypes, ops and compressions, roots that are not ranks, NULL
 * buffers with a count. Each rank of a job may make several communicators (call hoop_init* more
 * than once); every rank must make them in the same order, and each is independent.
 *
 * Lifetimes: hoop_finalize releases everything the communicator holds; the handle itself stays
 * valid as a tombstone, so every later call on it, hoop_finalize included, is
 * HOOP_ERR_INVALID_ARGUMENT ("finalized") rather than a crash (hoop_finalize(NULL) does nothing).
 * The same holds for a hoop_fusion_t after hoop_fusion_stop. Undefined, and not detected: a
 * handle no hoop_init* or hoop_fusion_start returned (uninitialised or freed memory), a call
 * racing with hoop_finalize or hoop_fusion_stop on the same handle, and buffers shorter than
 * their counts say.
 */
#ifndef HOOP_HOOP_H_
#define HOOP_HOOP_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HOOP_API_VERSION \
  19 /* 2: hoop_allreduce_ex, wire compression; 3: tensor fusion (hoop_fusion_*); 4: hoop_get_version;
                              5: nonblocking calls (hoop_i*, hoop_wait); 6: hoop_reduce, hoop_gather, hoop_scatter,
                                 hoop_alltoall; 7: HOOP_I8, HOOP_BOOL, HOOP_BAND, HOOP_BOR, HOOP_BXOR,
                                 hoop_allgatherv, hoop_reduce_scatterv, hoop_alltoallv;
                              8: point-to-point (hoop_send, hoop_recv, hoop_isend, hoop_irecv);
                              9: sub-communicators (hoop_comm_split, hoop_comm_dup, hoop_comm_free);
                              10: a store of the caller's (hoop_store_t, hoop_init_store);
                              11: HOOP_F8E4M3, HOOP_F8E5M2, hoop_dtype_info; 12: hoop_wait_background;
                              13: hoop_comm_revoke, HOOP_ERR_REVOKED; 14: hoop_comm_shrink, hoop_comm_shrink_excluding,
                                  hoop_comm_failed_ranks, hoop_comm_grow, hoop_init_join;
                              15: hoop_comm_newcomers, HOOP_JOIN; 16: the flight recorder (hoop_comm_trace,
                                  hoop_comm_dump_trace, hoop_comm_set_trace_label, hoop_comm_set_trace_name);
                              17: HOOP_I16..HOOP_U64; 18: hoop_fusion_join, hoop_fusion_joined,
                                  hoop_fusion_start_timeline, hoop_fusion_stop_timeline; 19: hoop_init_store_timeout */

/* The release this header belongs to (CMake's project version; the build checks they agree).
 * hoop_get_version() gives the library's, which may be newer than the header a program was
 * compiled with: compare HOOP_VERSION_CODE(major, minor, patch) values. */
#define HOOP_VERSION_MAJOR 0
#define HOOP_VERSION_MINOR 1
#define HOOP_VERSION_PATCH 0
#define HOOP_VERSION_CODE(major, minor, patch) ((major)*10000 + (minor)*100 + (patch))
#define HOOP_VERSION HOOP_VERSION_CODE(HOOP_VERSION_MAJOR, HOOP_VERSION_MINOR, HOOP_VERSION_PATCH)

/* Every enum below also has enumerators at the int range's two ends. They are no values of the
 * API (passing one is refused like any unknown value); they make every int a valid value of the
 * enum type, so a C caller may pass any int and C++ code (this library's, or a caller's) never
 * holds an enum value out of its type's range, which would be undefined behaviour there. */
#define HOOP_ENUM_RANGE_MIN_ (-0x7fffffff - 1)
#define HOOP_ENUM_RANGE_MAX_ 0x7fffffff

typedef enum {
  HOOP_SUCCESS = 0,
  HOOP_ERR_INVALID_ARGUMENT = 1, /* bad call: count, dtype, root, null pointer */
  HOOP_ERR_UNAVAILABLE = 2,      /* a peer or the store went away */
  HOOP_ERR_TIMEOUT = 3,          /* HOOP_TIMEOUT passed */
  HOOP_ERR_ABORTED = 4,          /* the communicator failed earlier; finalize it */
  HOOP_ERR_MISMATCH = 5,         /* ranks called different collectives/counts/dtypes */
  HOOP_ERR_PERMISSION = 6,       /* wrong job token */
  HOOP_ERR_UNIMPLEMENTED = 7,
  HOOP_ERR_INTERNAL = 8,
  HOOP_ERR_REVOKED = 9,                          /* a rank revoked the communicator (hoop_comm_revoke) */
  HOOP_STATUS_RANGE_MIN_ = HOOP_ENUM_RANGE_MIN_, /* not codes: see HOOP_ENUM_RANGE_MIN_ */
  HOOP_STATUS_RANGE_MAX_ = HOOP_ENUM_RANGE_MAX_
} hoop_status_t;

typedef enum {
  HOOP_U8 = 0,
  HOOP_I32 = 1,
  HOOP_I64 = 2,
  HOOP_F16 = 3,
  HOOP_BF16 = 4,
  HOOP_F32 = 5,
  HOOP_F64 = 6,
  HOOP_I8 = 7,
  HOOP_BOOL = 8, /* one byte per element, 0 or 1 */
  /* The OCP 8-bit floats, as NCCL names them: e4m3 without infinities (largest finite 448), e5m2
   * with them (largest 57344). Reduced in f32 and rounded once to nearest even; a result past
   * the largest finite saturates to it (as NCCL's and CUDA's satfinite conversion); a NaN is 0x7f.
   * Sum, avg, min, max and prod apply, not the bitwise ops. */
  HOOP_F8E4M3 = 9,
  HOOP_F8E5M2 = 10,
  /* Horovod's 16-bit and NCCL's unsigned integers (API 17); sums and products wrap around. */
  HOOP_I16 = 11,
  HOOP_U16 = 12,
  HOOP_U32 = 13,
  HOOP_U64 = 14,
  HOOP_DTYPE_RANGE_MIN_ = HOOP_ENUM_RANGE_MIN_, /* not dtypes: see HOOP_ENUM_RANGE_MIN_ */
  HOOP_DTYPE_RANGE_MAX_ = HOOP_ENUM_RANGE_MAX_
} hoop_dtype_t;

typedef enum {
  HOOP_SUM = 0,
  HOOP_AVG = 1,
  HOOP_MIN = 2,
  HOOP_MAX = 3,
  HOOP_PROD = 4,
  /* Bitwise and, or, xor: on the integer types and HOOP_BOOL only. HOOP_BOOL takes HOOP_MIN,
   * HOOP_MAX and these three (not sum, avg or prod: HOOP_BOR is its logical or, HOOP_BAND its
   * logical and). A combination that does not apply is HOOP_ERR_INVALID_ARGUMENT. */
  HOOP_BAND = 5,
  HOOP_BOR = 6,
  HOOP_BXOR = 7,
  HOOP_OP_RANGE_MIN_ = HOOP_ENUM_RANGE_MIN_, /* not ops: see HOOP_ENUM_RANGE_MIN_ */
  HOOP_OP_RANGE_MAX_ = HOOP_ENUM_RANGE_MAX_
} hoop_op_t;

typedef struct hoop_comm* hoop_comm_t;

/* Joins the job described by the environment: HOOP_RANK/HOOP_SIZE (hooprun), or OpenMPI's
 * OMPI_COMM_WORLD_* or Slurm's SLURM_* variables, with HOOP_STORE (tcp://HOST:PORT or
 * file:///DIR) and HOOP_JOB_TOKEN. Under mpirun or Slurm with a tcp:// store, rank 0 serves the
 * store itself. torchrun's RANK and WORLD_SIZE (LOCAL_RANK, LOCAL_WORLD_SIZE) count too: before
 * mpirun's and Slurm's where torchrun started the process (TORCHELASTIC_RUN_ID set), else last;
 * their store, served by rank 0, is tcp://MASTER_ADDR:(MASTER_PORT + 1) unless HOOP_STORE is set. */
hoop_status_t hoop_init_from_env(hoop_comm_t* comm);
/* Explicit form: rank, size, store URL and token given by the caller; the other settings still
 * come from HOOP_* variables. token may be NULL (then HOOP_JOB_TOKEN, else empty). */
hoop_status_t hoop_init(hoop_comm_t* comm, int rank, int size, const char* store_url, const char* token);
/* A rendezvous store of the caller's, for hoop_init_store: a framework's own (PyTorch's
 * c10d::Store, say), so that hoop joins its job without a store of hoop's. Keys are
 * NUL-terminated strings, values bytes. Each function returns 0 on success; on failure nonzero
 * (get: HOOP_STORE_TIMEOUT when the key did not appear in time), and may write a message of at
 * most err_cap bytes, NUL included, into err. get waits up to timeout_ms for the key and on
 * success sets *value to memory from malloc (hoop frees it) holding *len bytes (*value may be
 * NULL when *len is 0). add adds delta to the counter at key (0 if absent) and writes the new
 * value. hoop may call them from several threads at once. The struct is copied; ctx, and what the
 * functions use, must stay valid until the communicator (and every split or dup of it) is freed. */
#define HOOP_STORE_TIMEOUT 1
typedef struct {
  int (*set)(void* ctx, const char* key, const void* value, size_t len, char* err, size_t err_cap);
  int (*get)(void* ctx, const char* key, long long timeout_ms, void** value, size_t* len, char* err, size_t err_cap);
  int (*add)(void* ctx, const char* key, long long delta, long long* result, char* err, size_t err_cap);
  void* ctx;
} hoop_store_t;

/* hoop_init over the caller's store (above). host: the address this rank advertises to its peers (NULL: HOOP_HOST,
 * else 127.0.0.1, which serves one host only). Every other setting comes from HOOP_* variables, as for hoop_init; the
 * _timeout form waits timeout_s seconds (0.001 to 604800) where HOOP_TIMEOUT says, for comm and its splits and dups. */
hoop_status_t hoop_init_store(hoop_comm_t* comm, int rank, int size, const hoop_store_t* store, const char* host);
hoop_status_t hoop_init_store_timeout(hoop_comm_t* comm, int rank, int size, const hoop_store_t* store,
                                      const char* host, double timeout_s);

hoop_status_t hoop_finalize(hoop_comm_t comm);

/* The loaded library's version as HOOP_VERSION_CODE(major, minor, patch), as ncclGetVersion.
 * Needs no communicator. HOOP_ERR_INVALID_ARGUMENT when version is NULL. */
hoop_status_t hoop_get_version(int* version);

/* What the library knows of a dtype (its table, common/dtype.h): for a framework mapping its own
 * types, and for the Python package and the torch backend, which read it. Strings are the
 * library's, valid while it is loaded. Walk dtype 0, 1, ... until HOOP_ERR_INVALID_ARGUMENT to
 * list them all; a library newer than the header may know more. */
typedef struct {
  const char* name;   /* hoop's name: "f32", "f8e4m3" (hoop-perf -d takes it) */
  const char* c_name; /* the enumerator less HOOP_: "F32", "F8E4M3" */
  size_t size;        /* bytes per element */
  int is_float;       /* 1 for f16, bf16, f32, f64 and the fp8s */
  unsigned ops;       /* bit (1u << op) set for every hoop_op_t that reduces it */
  const char* numpy;  /* NumPy's dtype name, or ml_dtypes' where NumPy has none (bfloat16, the fp8s) */
  const char* torch;  /* torch's: torch.<torch> ("float8_e4m3fn"); "" where torch has none */
  const char* aten;   /* c10::ScalarType's name, as c10::toString gives it ("Float8_e4m3fn") */
} hoop_dtype_info_t;
/* HOOP_ERR_INVALID_ARGUMENT for an unknown dtype or a NULL info. Needs no communicator. */
hoop_status_t hoop_dtype_info(hoop_dtype_t dtype, hoop_dtype_info_t* info);

hoop_status_t hoop_rank(hoop_comm_t comm, int* rank);
hoop_status_t hoop_size(hoop_comm_t comm, int* size);
hoop_status_t hoop_local_rank(hoop_comm_t comm, int* local_rank);
hoop_status_t hoop_local_size(hoop_comm_t comm, int* local_size);

/* The CUDA device this rank uses by default: local rank r uses the r-th device the process sees
 * (r mod their count; the rank when the local rank is unknown), the GPU hooprun binds it near.
 * hoop does not switch the caller's device: call cudaSetDevice(*device) (as with NCCL, buffers
 * are found on whatever device they live on). HOOP_ERR_UNIMPLEMENTED when built without CUDA,
 * HOOP_ERR_UNAVAILABLE when no device is visible. */
hoop_status_t hoop_local_device(hoop_comm_t comm, int* device);
/* This rank's place on its host as JSON (hwloc's view): rank, local_rank, local_size, host,
 * bound_cpus ("0-3,8"), gpu ({device, name, pci, near_cpus, near_me} or null with gpu_why) and
 * nics ([{name, pci, near_cpus, near_me}]); near_me says whether the device's nearest
 * processors include one this rank may run on. Writes the text and its terminating NUL into buf
 * when cap holds them, and its length plus one into *needed (may be NULL); when cap is too small
 * (buf may then be NULL), writes nothing into buf and returns HOOP_ERR_INVALID_ARGUMENT. */
hoop_status_t hoop_locality(hoop_comm_t comm, char* buf, size_t cap, size_t* needed);

/* sendbuf and recvbuf may be equal (in place). */
hoop_status_t hoop_allreduce(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count, hoop_dtype_t dtype,
                             hoop_op_t op);
/* On non-root ranks sendbuf is ignored and may be NULL. */
hoop_status_t hoop_broadcast(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count, hoop_dtype_t dtype,
                             int root);
/* recvbuf holds size * sendcount elements. */
hoop_status_t hoop_allgather(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t sendcount,
                             hoop_dtype_t dtype);
/* sendbuf holds size * recvcount elements. */
hoop_status_t hoop_reduce_scatter(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t recvcount,
                                  hoop_dtype_t dtype, hoop_op_t op);
hoop_status_t hoop_barrier(hoop_comm_t comm);

/* Rooted collectives. On ranks other than the root the root-only buffer (reduce's and gather's
 * recvbuf, scatter's sendbuf) is ignored and may be NULL; every rank passes the same count,
 * dtype, op and root. Reduce: the reduction of every rank's count elements lands in root's
 * recvbuf (count elements); sendbuf may equal recvbuf on the root. Gather: root's recvbuf holds
 * size * sendcount elements, block r from rank r; root's sendbuf may be its own block. Scatter:
 * root's sendbuf holds size * recvcount elements, block r to rank r; root's recvbuf may be its
 * own block. Algorithms: reduce runs a binomial tree up to 64 KiB and a pipelined chain above;
 * gather and scatter move each block straight between its rank and the root. */
hoop_status_t hoop_reduce(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count, hoop_dtype_t dtype,
                          hoop_op_t op, int root);
hoop_status_t hoop_gather(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t sendcount, hoop_dtype_t dtype,
                          int root);
hoop_status_t hoop_scatter(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t recvcount, hoop_dtype_t dtype,
                           int root);
/* sendbuf and recvbuf hold size * count_per_rank elements: block p of sendbuf goes to rank p, block
 * p of recvbuf comes from rank p. They may be the same memory (then exchanged from a copy).
 * Pairwise exchange: n-1 rounds, sending to rank+k while receiving from rank-k. */
hoop_status_t hoop_alltoall(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count_per_rank,
                            hoop_dtype_t dtype);

/* The v-collectives, MPI's meanings and argument order. Counts and displacements are in
 * elements, one entry per rank (size entries are read; the arrays are copied, so they may be
 * freed once the call returns, nonblocking forms included). Blocks of a receive buffer may not
 * overlap. Allgatherv: sendcount must be recvcounts[rank]; block r (recvcounts[r] elements at
 * displs[r]) comes from rank r; every rank passes the same recvcounts and displs; sendbuf may be
 * the rank's own block of recvbuf. Reduce_scatterv: sendbuf holds every block back to back
 * (recvcounts[0] elements for rank 0, then rank 1's, ...); recvbuf gets the reduction of block
 * rank (recvcounts[rank] elements). Alltoallv: block p of sendbuf (sendcounts[p] at sdispls[p])
 * goes to rank p, block p of recvbuf (recvcounts[p] at rdispls[p]) comes from rank p;
 * sendcounts[p] on this rank must be recvcounts[rank] on rank p (where they differ, both ranks'
 * calls fail naming both lengths); sendbuf and recvbuf may overlap. Algorithms: the ring
 * (allgatherv, reduce_scatterv) and the pairwise exchange (alltoallv), one whole block a step. */
hoop_status_t hoop_allgatherv(hoop_comm_t comm, const void* sendbuf, size_t sendcount, void* recvbuf,
                              const size_t* recvcounts, const size_t* displs, hoop_dtype_t dtype);
hoop_status_t hoop_reduce_scatterv(hoop_comm_t comm, const void* sendbuf, void* recvbuf, const size_t* recvcounts,
                                   hoop_dtype_t dtype, hoop_op_t op);
hoop_status_t hoop_alltoallv(hoop_comm_t comm, const void* sendbuf, const size_t* sendcounts, const size_t* sdispls,
                             void* recvbuf, const size_t* recvcounts, const size_t* rdispls, hoop_dtype_t dtype);

/* ---- Nonblocking calls ----
 *
 * hoop_iallreduce and the other hoop_i* calls take the blocking form's arguments plus a request
 * pointer, check the arguments (a bad call is refused at once, as the blocking form would be, and
 * *request is set to NULL), and return with the operation queued. Operations on one communicator
 * run in the order they were posted, blocking ones included, one at a time; every rank must post
 * the same operations in the same order. Many may be in flight; the buffers belong to the
 * operation until it completes.
 *
 * hoop_test sets *done to 1 once the operation completed (then hoop_wait returns at once), else
 * 0; it does not free the request. hoop_wait blocks until it completes, returns its status (its
 * failure's message in hoop_last_error) and frees the request; a collective still queued, behind
 * nothing running, it runs on the calling thread (with the collectives queued ahead of it). hoop_wait_all does so for n
 * requests (NULL entries count as complete), returns the first failure in array order, frees them
 * all and sets the entries to NULL; a freed or repeated entry makes it refuse the whole array,
 * waiting for none. hoop_request_free frees a request without waiting: the operation still runs.
 *
 * While a nonblocking operation runs on hoop's worker thread, that thread's waits for data sleep
 * at once: its caller is presumed to compute meanwhile, and a spin would take a core from it.
 * While a thread is blocked in hoop_wait or hoop_wait_all on the communicator, they spin a few
 * tens of microseconds first (a reply to a small message comes within that). hoop_wait_background
 * is hoop_wait for a thread that stands in for no caller (a framework's completion thread, while
 * the caller it serves computes): it does not count as waiting, and lets nothing spin for it.
 * A request used after it was freed is HOOP_ERR_INVALID_ARGUMENT, not a crash (requests are ids,
 * never reused). hoop_finalize first completes every operation still queued on the
 * communicator; their requests then report how they ended. */
typedef struct hoop_request* hoop_request_t;

hoop_status_t hoop_iallreduce(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count, hoop_dtype_t dtype,
                              hoop_op_t op, hoop_request_t* request);
hoop_status_t hoop_ibroadcast(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count, hoop_dtype_t dtype,
                              int root, hoop_request_t* request);
hoop_status_t hoop_iallgather(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t sendcount,
                              hoop_dtype_t dtype, hoop_request_t* request);
hoop_status_t hoop_ireduce_scatter(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t recvcount,
                                   hoop_dtype_t dtype, hoop_op_t op, hoop_request_t* request);
hoop_status_t hoop_ibarrier(hoop_comm_t comm, hoop_request_t* request);
hoop_status_t hoop_ireduce(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count, hoop_dtype_t dtype,
                           hoop_op_t op, int root, hoop_request_t* request);
hoop_status_t hoop_igather(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t sendcount, hoop_dtype_t dtype,
                           int root, hoop_request_t* request);
hoop_status_t hoop_iscatter(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t recvcount, hoop_dtype_t dtype,
                            int root, hoop_request_t* request);
hoop_status_t hoop_ialltoall(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count_per_rank,
                             hoop_dtype_t dtype, hoop_request_t* request);
hoop_status_t hoop_iallgatherv(hoop_comm_t comm, const void* sendbuf, size_t sendcount, void* recvbuf,
                               const size_t* recvcounts, const size_t* displs, hoop_dtype_t dtype,
                               hoop_request_t* request);
hoop_status_t hoop_ireduce_scatterv(hoop_comm_t comm, const void* sendbuf, void* recvbuf, const size_t* recvcounts,
                                    hoop_dtype_t dtype, hoop_op_t op, hoop_request_t* request);
hoop_status_t hoop_ialltoallv(hoop_comm_t comm, const void* sendbuf, const size_t* sendcounts, const size_t* sdispls,
                              void* recvbuf, const size_t* recvcounts, const size_t* rdispls, hoop_dtype_t dtype,
                              hoop_request_t* request);
hoop_status_t hoop_test(hoop_request_t request, int* done);
hoop_status_t hoop_wait(hoop_request_t request);
hoop_status_t hoop_wait_background(hoop_request_t request);
hoop_status_t hoop_wait_all(hoop_request_t* requests, int n);
hoop_status_t hoop_request_free(hoop_request_t request);

/* ---- Calls on a CUDA stream ----
 *
 * hoop_allreduce_stream and the other *_stream calls take the blocking form's arguments plus a
 * CUDA stream (a cudaStream_t passed as void*; NULL is the legacy default stream) and behave as
 * NCCL's calls do: the operation starts after the work queued on the stream before the call,
 * work queued on the stream after the call waits for it, and the calling thread does not block.
 * The buffers may be device memory or host memory. A bad call is refused at once, as the
 * blocking form would be; so is any call where CUDA is not built in or there is no device. A
 * failure once the call is queued poisons the communicator, as for any call: the stream still
 * goes on (the output is then undefined) and the next call on the communicator fails naming
 * the cause. Queued in order with the communicator's other calls, and started in that order.
 *
 * hoop_send_stream and hoop_recv_stream are ncclSend and ncclRecv: ordered on the stream the same
 * way, the stream's later work waiting until the message is sent or received (each call for
 * itself: calls on different streams end in whatever order their peers allow). The bytes of
 * recvbuf past a shorter message are left as they were. A device buffer passes through pinned
 * host memory by copies queued on the stream (CUDA IPC between ranks of a host is to come). */
hoop_status_t hoop_allreduce_stream(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                                    hoop_dtype_t dtype, hoop_op_t op, void* cuda_stream);
hoop_status_t hoop_broadcast_stream(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                                    hoop_dtype_t dtype, int root, void* cuda_stream);
hoop_status_t hoop_allgather_stream(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t sendcount,
                                    hoop_dtype_t dtype, void* cuda_stream);
hoop_status_t hoop_reduce_scatter_stream(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t recvcount,
                                         hoop_dtype_t dtype, hoop_op_t op, void* cuda_stream);
hoop_status_t hoop_barrier_stream(hoop_comm_t comm, void* cuda_stream);
hoop_status_t hoop_reduce_stream(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count, hoop_dtype_t dtype,
                                 hoop_op_t op, int root, void* cuda_stream);
hoop_status_t hoop_gather_stream(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t sendcount,
                                 hoop_dtype_t dtype, int root, void* cuda_stream);
hoop_status_t hoop_scatter_stream(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t recvcount,
                                  hoop_dtype_t dtype, int root, void* cuda_stream);
hoop_status_t hoop_alltoall_stream(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count_per_rank,
                                   hoop_dtype_t dtype, void* cuda_stream);
hoop_status_t hoop_allgatherv_stream(hoop_comm_t comm, const void* sendbuf, size_t sendcount, void* recvbuf,
                                     const size_t* recvcounts, const size_t* displs, hoop_dtype_t dtype,
                                     void* cuda_stream);
hoop_status_t hoop_reduce_scatterv_stream(hoop_comm_t comm, const void* sendbuf, void* recvbuf,
                                          const size_t* recvcounts, hoop_dtype_t dtype, hoop_op_t op,
                                          void* cuda_stream);
hoop_status_t hoop_alltoallv_stream(hoop_comm_t comm, const void* sendbuf, const size_t* sendcounts,
                                    const size_t* sdispls, void* recvbuf, const size_t* recvcounts,
                                    const size_t* rdispls, hoop_dtype_t dtype, void* cuda_stream);
hoop_status_t hoop_send_stream(hoop_comm_t comm, const void* buf, size_t count, hoop_dtype_t dtype, int peer, int tag,
                               void* cuda_stream);
hoop_status_t hoop_recv_stream(hoop_comm_t comm, void* buf, size_t count, hoop_dtype_t dtype, int peer, int tag,
                               void* cuda_stream);

/* ---- Point-to-point ----
 *
 * hoop_send sends count elements to rank `peer` with `tag` (>= 0); hoop_recv receives the first
 * message from `peer` (or from any rank: HOOP_ANY_SOURCE) with `tag` into buf, which may be
 * longer than the message (a shorter one is an error naming both sizes; the dtypes must agree).
 * `info` (may be NULL) gets the sender, the tag and the element count; for hoop_irecv it is
 * written by the time hoop_test reports done or hoop_wait/hoop_wait_all return, while the request
 * lives. Between one pair with one tag, messages are received in the order they were sent; a
 * rank may send to itself.
 *
 * Receives may be posted in any order, and after the message arrived: a message no receive has
 * taken yet is held by its receiver, up to HOOP_UNEXPECTED_BYTES per communicator (default 64M,
 * shared out over the senders); past that its sender waits. A call that its peer does not match
 * within HOOP_TIMEOUT fails naming peer and tag. Sends and receives are queued behind earlier
 * calls like collectives, but nothing posted after them waits for them: they complete when the
 * peer does its part, while the rank is inside any hoop call (or a hoop_i* call is in flight).
 * Point-to-point calls and collectives interleave freely. hoop_finalize fails the sends and
 * receives still in flight (HOOP_ERR_ABORTED). */
#define HOOP_ANY_SOURCE (-1)
typedef struct {
  int source;
  int tag;
  size_t count;
} hoop_recv_info_t;

hoop_status_t hoop_send(hoop_comm_t comm, const void* buf, size_t count, hoop_dtype_t dtype, int peer, int tag);
hoop_status_t hoop_recv(hoop_comm_t comm, void* buf, size_t count, hoop_dtype_t dtype, int peer, int tag,
                        hoop_recv_info_t* info);
hoop_status_t hoop_isend(hoop_comm_t comm, const void* buf, size_t count, hoop_dtype_t dtype, int peer, int tag,
                         hoop_request_t* request);
hoop_status_t hoop_irecv(hoop_comm_t comm, void* buf, size_t count, hoop_dtype_t dtype, int peer, int tag,
                         hoop_recv_info_t* info, hoop_request_t* request);

/* ---- Sub-communicators ----
 *
 * hoop_comm_split, MPI_Comm_split's meaning: every rank of comm calls it (a collective on comm);
 * the ranks passing one color (>= 0) make one new communicator, ranked by key (ties: by rank in
 * comm); a rank passing HOOP_UNDEFINED gets none (*newcomm is NULL). hoop_comm_dup is a split
 * with one color and keys in comm's order. A new communicator opens no connections: it talks
 * over comm's, in its own tag space with its own order of calls, so communicators of disjoint
 * groups (and, from different threads, overlapping ones) run their calls at the same time. Ranks
 * that share two communicators should issue their calls on them in the same order: a message of
 * one waits on the link behind an earlier one of the other (as with NCCL's communicators). Up to
 * 255 communicators may share one set of connections on a rank.
 *
 * Arguments that disagree fail on every rank, not one: a negative color other than HOOP_UNDEFINED,
 * a rank that calls another collective instead (the error names both calls), a rank that never
 * calls (HOOP_TIMEOUT, naming it). Communicators sharing connections share failure: a call that
 * fails one (a lost rank, a timeout) fails all of them, on every rank.
 *
 * hoop_comm_free releases a communicator (hoop_finalize does the same; either works on any
 * communicator, the one from hoop_init* included): a freed split waits for payloads already
 * moving, fails sends and receives never matched, and its id is reused once every member freed
 * it. The connections, and the communicator they were made for, stay until the last communicator
 * using them is freed. */
#define HOOP_UNDEFINED (-1)
hoop_status_t hoop_comm_split(hoop_comm_t comm, int color, int key, hoop_comm_t* newcomm);
hoop_status_t hoop_comm_dup(hoop_comm_t comm, hoop_comm_t* newcomm);
hoop_status_t hoop_comm_free(hoop_comm_t comm);

/* ---- Deterministic mode: results reproducible to the bit ----
 *
 * On (hoop_comm_set_deterministic(comm, 1), or HOOP_DETERMINISTIC=1 for every communicator of
 * the process), every allreduce, reduce, reduce_scatter(v) and fusion-runtime allreduce on comm
 * gives each element the bits of one canonical order: the left fold over the ranks in rank order,
 * ((x0 op x1) op x2) ... op x(n-1), each step rounded to the dtype (f16 and bf16 computed in f32
 * and rounded per step), the average dividing the last step's sum by n. The bits do not depend
 * on the algorithm named, the message size, HOOP_CHUNK_BYTES, HOOP_WINDOW, the transport, the
 * hosts or ranks per host, what is fused beside a tensor, in or out of place, host or device
 * buffers, or the CPU's instruction set. They do depend on the rank count, the order of the
 * ranks, the dtype and op. The reductions then run the fold algorithms ("fold", "fold_all",
 * "fold_root", README "Deterministic mode"), whatever HOOP_ALGO or a call names; device buffers are staged
 * whole through host memory. A compressed allreduce (fp16/bf16 on the wire) stays on the ring:
 * the same bits for the same settings only. It applies to the calls made after it; every rank
 * must set the same (one that differs fails its next reduction: the ranks disagree on the
 * algorithm). Splits, duplicates, shrinks and grows inherit it; newcomers to a grow take theirs
 * from HOOP_DETERMINISTIC. hoop_comm_deterministic reads it (1 or 0). */
hoop_status_t hoop_comm_set_deterministic(hoop_comm_t comm, int on);
hoop_status_t hoop_comm_deterministic(hoop_comm_t comm, int* on);

/* ---- The flight recorder: which rank is where when a job hangs ----
 *
 * Every communicator keeps its last HOOP_TRACE_OPS operations (2000 by default; 0: off), and
 * those still in flight, each with its call number, collective sequence number, kind, dtype,
 * count, root or peer, algorithm, memory, stream, state (started, done, failed), the step and
 * chunk it waits at, times and, for a failed one, why and the peers it waited for.
 * hoop_comm_trace gives this rank's as JSON, into buf as hoop_locality does;
 * hoop_comm_dump_trace writes it to dir/hoop-trace.<comm>.<rank>.json (dir NULL: the
 * HOOP_TRACE_DIR directory). Neither waits on a call in progress. A rank whose communicator
 * fails (a timeout, a lost peer, ranks that disagree) writes it there by itself where
 * HOOP_TRACE_DIR is set, and SIGUSR1 (HOOP_TRACE_SIGNAL) makes every communicator of the process
 * write it. hoop_comm_set_trace_label names the communicator in its dumps as the caller knows
 * it (the torch backend: the process group's name); NULL or "" clears it.
 * hoop_comm_set_trace_name names the next call made on comm, from any thread, in the recorder
 * ("name"; its first 95 characters): the torch backend gives PyTorch's op name
 * ("hoop:allreduce_coalesced"); NULL or "" clears a name not yet taken. */
hoop_status_t hoop_comm_trace(hoop_comm_t comm, char* buf, size_t cap, size_t* needed);
hoop_status_t hoop_comm_dump_trace(hoop_comm_t comm, const char* dir);
hoop_status_t hoop_comm_set_trace_label(hoop_comm_t comm, const char* label);
hoop_status_t hoop_comm_set_trace_name(hoop_comm_t comm, const char* name);

/* Revoking, shrinking and growing communicators (hoop_comm_revoke, hoop_comm_shrink,
 * hoop_comm_grow, ...): in hoop/hoop_elastic.h, part of this header (included at its end). */

/* Wire compression of f32 and f64 sum/avg allreduces: the data travels in 16 bits, and every
 * hop of the ring decodes what it receives, adds it in the data's own type and encodes again;
 * every rank ends with the same bits.
 *
 * Overflow: fp16 is scaled per chunk. Each message carries a power-of-two scale that puts the
 * chunk's largest finite magnitude in [2^14, 2^15), so no finite value ever becomes inf (and
 * small values keep full precision); inf and NaN travel as themselves. Nothing saturates.
 *
 * Error bound, for n ranks and element j of a sum (for avg, divide both sides by n):
 *   |result_j - exact_j| <= g * (A_j + 2^-24 * M)
 * where A_j = sum over ranks of |x_j|, M = the largest A_j of the call, and
 * g = hoop_compression_error_factor(c, n) = n u' / (1 - n u'), u' = u + 2^-23, with u = 2^-11 for
 * fp16 and 2^-8 for bf16: each of the n roundings costs at most u', so the error grows with the
 * rank count, no faster.
 *
 * Error feedback (off unless a residual is given): residual is an array of the call's dtype and
 * count, zeroed before the first call and passed again on every call for the same tensor. Each
 * rank adds it to its input and stores there the rounding its own hops made, so errors do not
 * accumulate over calls. */
typedef enum {
  HOOP_COMPRESSION_DEFAULT = -1, /* HOOP_COMPRESSION's setting (default none) */
  HOOP_COMPRESSION_NONE = 0,
  HOOP_COMPRESSION_FP16 = 1,
  HOOP_COMPRESSION_BF16 = 2,
  HOOP_COMPRESSION_AUTO = 3, /* fp16 across hosts on links slower than 1.5 GB/s, from 1 MiB up */
  HOOP_COMPRESSION_RANGE_MIN_ = HOOP_ENUM_RANGE_MIN_, /* not compressions: see HOOP_ENUM_RANGE_MIN_ */
  HOOP_COMPRESSION_RANGE_MAX_ = HOOP_ENUM_RANGE_MAX_
} hoop_compression_t;

typedef struct {
  hoop_compression_t compression;
  void* residual; /* error feedback, or NULL */
} hoop_allreduce_opts_t;

/* hoop_allreduce with options; opts may be NULL (then it is hoop_allreduce). FP16 or BF16 on
 * data other than f32/f64 with sum or avg is HOOP_ERR_INVALID_ARGUMENT; DEFAULT and AUTO leave
 * such calls uncompressed. Compressed calls run the ring algorithm. */
hoop_status_t hoop_allreduce_ex(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count, hoop_dtype_t dtype,
                                hoop_op_t op, const hoop_allreduce_opts_t* opts);
/* hoop_allreduce_ex's nonblocking form. */
hoop_status_t hoop_iallreduce_ex(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count, hoop_dtype_t dtype,
                                 hoop_op_t op, const hoop_allreduce_opts_t* opts, hoop_request_t* request);
/* g of the bound above (0 for NONE or one rank). */
double hoop_compression_error_factor(hoop_compression_t compression, int nranks);

const char* hoop_status_string(hoop_status_t status);
/* The last failure's message on the calling thread ("" if none). Valid until the next call. */
const char* hoop_last_error(void);

#ifdef __cplusplus
}
#endif

/* The tensor fusion calls (hoop_fusion_*) and the calls that go on past failures (revoke,
 * shrink, grow) are declared in their own headers, part of this one. */
#include "hoop/hoop_elastic.h"
#include "hoop/hoop_fusion.h"

#endif /* HOOP_HOOP_H_ */
