/* hoop: the stable C API's tensor fusion calls (hoop_fusion_*), Horovod's engine for C callers.
 *
 * Part of hoop/hoop.h, which includes it: include that one. Everything hoop.h says of status
 * codes, threads, buffers and lifetimes holds here too.
 */
#ifndef HOOP_HOOP_FUSION_H_
#define HOOP_HOOP_FUSION_H_

#include "hoop/hoop.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Tensor fusion: named tensors from any thread, negotiated, fused, reduced, handed back ----
 *
 * hoop_fusion_start starts a background runtime on every rank of a communicator. Any thread may
 * then submit named tensors, in any order; every HOOP_CYCLE_TIME_MS (default 1) the ranks agree
 * which names every rank has submitted, pack those that one collective can serve into a fusion
 * buffer of up to HOOP_FUSION_THRESHOLD bytes (default 64 MiB), run it, and copy the results out.
 * A name may be submitted again once its earlier submission has completed; steady-state
 * training (the same names every step) costs one tiny collective per cycle to negotiate.
 *
 * A submission returns HOOP_SUCCESS and a handle, or an error at once for a bad call. The
 * tensor's own result comes from hoop_fusion_wait(handle), or from the callback (on the
 * runtime's thread; it must not block, it may submit; it has returned before the tensor's
 * hoop_fusion_wait or hoop_fusion_test reports it complete). handle may be NULL when a callback is
 * given; otherwise wait on every handle, which frees it. Until a tensor completes its buffers
 * belong to the runtime. A tensor fails, on every rank that submitted it, when the ranks passed
 * different parameters for its name (HOOP_ERR_MISMATCH, naming the ranks and values), when some
 * rank did not submit it within the communicator's timeout (HOOP_TIMEOUT, or the timeout given
 * to hoop_init_store_timeout; HOOP_ERR_TIMEOUT, naming them), when a peer is lost
 * (HOOP_ERR_UNAVAILABLE for the
 * tensors of the failing collective, HOOP_ERR_ABORTED for every other), or when the runtime is
 * stopped first (HOOP_ERR_ABORTED). A name submitted again while its earlier submission is
 * pending is refused at the call (HOOP_ERR_INVALID_ARGUMENT). Rank 0 logs which ranks are missing for any name that
 * waits longer than HOOP_STALL_WARNING_S (default 60). HOOP_TIMELINE=FILE makes rank 0 write a
 * Chrome trace of every tensor's phases.
 *
 * While the runtime runs, direct collectives on its communicator return
 * HOOP_ERR_INVALID_ARGUMENT. hoop_fusion_stop is negotiated: every rank stops after the same
 * cycle, so call it on every rank. */
typedef struct hoop_fusion* hoop_fusion_t;
typedef long long hoop_handle_t;
/* message: the failure's text ("" on success), valid during the call. */
typedef void (*hoop_callback_t)(hoop_status_t status, const char* message, void* user_data);
typedef struct {
  hoop_compression_t compression; /* as hoop_allreduce_opts_t; 0 is NONE, use DEFAULT for HOOP_COMPRESSION */
  double prescale;                /* input multiplied by this before the reduction (0 or 1: none) */
  double postscale;               /* result multiplied by this after it (0 or 1: none) */
} hoop_tensor_opts_t;

/* On failure *fusion is left as it was (it may hold the runtime already driving comm). */
hoop_status_t hoop_fusion_start(hoop_comm_t comm, hoop_fusion_t* fusion);
/* opts may be NULL; scale factors need f16/bf16/f32/f64. */
hoop_status_t hoop_fusion_allreduce(hoop_fusion_t fusion, const char* name, const void* sendbuf, void* recvbuf,
                                    size_t count, hoop_dtype_t dtype, hoop_op_t op, const hoop_tensor_opts_t* opts,
                                    hoop_callback_t callback, void* user_data, hoop_handle_t* handle);
hoop_status_t hoop_fusion_broadcast(hoop_fusion_t fusion, const char* name, const void* sendbuf, void* recvbuf,
                                    size_t count, hoop_dtype_t dtype, int root, hoop_callback_t callback,
                                    void* user_data, hoop_handle_t* handle);
/* recvbuf holds size * sendcount elements; every rank passes the same sendcount. */
hoop_status_t hoop_fusion_allgather(hoop_fusion_t fusion, const char* name, const void* sendbuf, void* recvbuf,
                                    size_t sendcount, hoop_dtype_t dtype, hoop_callback_t callback, void* user_data,
                                    hoop_handle_t* handle);
/* Horovod's join, for a rank whose data ran out before the others': this rank has no more
 * tensors for now. Until every rank has joined, its runtime stands in for it in every allreduce
 * the other ranks submit, with the op's identity: sum, band, bor and bxor give the result over
 * the ranks that submitted the tensor, HOOP_AVG divides that sum by every rank (Horovod's joined
 * zeros), min, max and prod ignore the joined ranks (a prescale is allowed for: prod's stand-in
 * is 1/prescale). A broadcast or allgather submitted meanwhile fails on the ranks that submitted
 * it (HOOP_ERR_MISMATCH, naming the joined ranks). The join's handle completes once every rank
 * has joined, with *last_rank (which must stay valid until then) set to the rank that joined last,
 * the same on every rank; then the ranks submit as before, and may join again. Tensors this rank
 * submitted before joining run as usual. A second join before this rank's first completes is
 * HOOP_ERR_INVALID_ARGUMENT; hoop_fusion_synchronize does not wait for a join. */
hoop_status_t hoop_fusion_join(hoop_fusion_t fusion, int* last_rank, hoop_callback_t callback, void* user_data,
                               hoop_handle_t* handle);
/* *joined = 1 while some rank has joined and not every rank has yet (as of this rank's latest
 * negotiation cycle), else 0: a caller about to make a direct collective that a joined rank would
 * never enter can refuse it instead. */
hoop_status_t hoop_fusion_joined(hoop_fusion_t fusion, int* joined);
/* Horovod's start_timeline and stop_timeline, on any rank, from any thread: rank 0 starts writing
 * the timeline (as HOOP_TIMELINE does from start-up) to a new file at path, closing one it was
 * writing, with each negotiation cycle marked where mark_cycles is non-zero
 * (HOOP_TIMELINE_MARK_CYCLES); the other ranks do nothing. A file rank 0 cannot write is
 * HOOP_ERR_INVALID_ARGUMENT. hoop_fusion_stop_timeline closes it, complete, before returning. */
hoop_status_t hoop_fusion_start_timeline(hoop_fusion_t fusion, const char* path, int mark_cycles);
hoop_status_t hoop_fusion_stop_timeline(hoop_fusion_t fusion);
/* Blocks until the tensor completes; returns its status and frees the handle. */
hoop_status_t hoop_fusion_wait(hoop_fusion_t fusion, hoop_handle_t handle);
/* *done = 1 once the tensor completed (then hoop_fusion_wait returns at once), else 0. */
hoop_status_t hoop_fusion_test(hoop_fusion_t fusion, hoop_handle_t handle, int* done);
/* Waits for every tensor this rank submitted before the call; the first failure among them. */
hoop_status_t hoop_fusion_synchronize(hoop_fusion_t fusion);
/* Stops the runtime on every rank (call it on every rank), fails what has not run, releases
 * the runtime and its handles, and gives the communicator back to direct calls. Later calls on
 * fusion, a second hoop_fusion_stop too, are HOOP_ERR_INVALID_ARGUMENT. */
hoop_status_t hoop_fusion_stop(hoop_fusion_t fusion);

#ifdef __cplusplus
}
#endif

#endif /* HOOP_HOOP_FUSION_H_ */
