/* hoop: the stable C API's calls that go on past failures: revoking a communicator, shrinking it
 * to the survivors, growing it with new processes (MPI ULFM's MPIX_Comm_revoke and
 * MPIX_Comm_shrink, NCCL's ncclCommRevoke, ncclCommShrink and ncclCommGrow).
 *
 * Part of hoop/hoop.h, which includes it: include that one. Everything hoop.h says of status
 * codes, threads, buffers and lifetimes holds here too.
 */
#ifndef HOOP_HOOP_ELASTIC_H_
#define HOOP_HOOP_ELASTIC_H_

#include "hoop/hoop.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Revoking a communicator (MPI ULFM's MPIX_Comm_revoke, NCCL's ncclCommRevoke) ----
 *
 * hoop_comm_revoke, called by any one rank (no other rank calls it), from any thread: every call
 * on comm still running or made later, on every rank, fails with HOOP_ERR_REVOKED, and
 * hoop_last_error names the rank that revoked it and `reason` (NULL: "no reason given"). A rank
 * inside a call that waits for others stops within tens of milliseconds; the others learn through
 * the connections at once, and each passes the word on, so it spreads even if the revoking rank
 * dies while telling them. A call that returned success before has done what it said.
 *
 * The communicators sharing comm's connections (its splits and duplicates, and the one it was
 * split from) are revoked with it, as they share any failure. The communicator stays revoked:
 * free it (hoop_comm_free, hoop_finalize; these return promptly). Returns once the peers have been
 * told; revoking a communicator that failed or was revoked already succeeds and does nothing more. */
hoop_status_t hoop_comm_revoke(hoop_comm_t comm, const char* reason);

/* ---- Going on without lost ranks (MPI ULFM's MPIX_Comm_shrink, NCCL's ncclCommShrink) ----
 *
 * hoop_comm_failed_ranks: the ranks of comm this rank knows to have failed, ascending: peers its
 * connections lost, processes on this host that exited, ranks hooprun saw exit (--enable-recovery),
 * ranks any member of a shrink of comm named so. Writes up to `capacity` of them into `ranks` (NULL
 * with capacity 0: count only), their number into *count. Another rank may know more or fewer.
 *
 * hoop_comm_shrink: every live rank of comm calls it, typically after a call failed because a
 * rank was lost or comm was revoked (revoke first where some rank may still be inside a call
 * that waits on a live one). The survivors agree through the job's store on one membership, even
 * when another rank dies during the shrink, and *newcomm is a new communicator of them, ranked in
 * their order in comm, with connections of its own (comm stays as it was: free it). A rank that
 * is gone is left out; so is one that has not called within HOOP_SHRINK_WAIT seconds (default
 * 10: a stopped process, a silent host), which gets HOOP_ERR_UNAVAILABLE saying so. It needs
 * nothing from the lost ranks, and its time is that of making a communicator once the survivors
 * know who is gone: at once for a rank on the same host or under hooprun, else HOOP_SHRINK_WAIT.
 * The store must outlive the lost ranks: hooprun's does; under mpirun, Slurm or torchrun rank 0
 * serves it, so rank 0's death is not survivable there (README, "Errors and failures"). */
hoop_status_t hoop_comm_failed_ranks(hoop_comm_t comm, int* ranks, int capacity, int* count);
hoop_status_t hoop_comm_shrink(hoop_comm_t comm, hoop_comm_t* newcomm);
/* The same, with `count` ranks of comm left out by the caller as well, alive or not (NCCL's
 * ncclCommShrink, PyTorch's shrink_group name them): they do not call it, and the others do not
 * wait for them. A rank among them that calls it is refused. */
hoop_status_t hoop_comm_shrink_excluding(hoop_comm_t comm, const int* excluded, int count, hoop_comm_t* newcomm);

/* ---- Admitting new processes (NCCL's ncclCommGrow) ----
 *
 * hoop_comm_grow: every rank of comm calls it (a collective on comm) to admit `count` (>= 1) new
 * processes, each of which calls hoop_init_join. *newcomm holds comm's ranks, with their numbers,
 * then the newcomers as ranks size .. size + count - 1, in the order they called hoop_init_join;
 * it has connections of its own, and comm stays as it was. Everything goes through the job's
 * store, nothing through comm's connections, so it also works after a loss (grow a shrunk
 * communicator back with replacements). Waits up to HOOP_TIMEOUT for the newcomers. Newcomers
 * queue at the job: a grow admits the next `count` of them in line. All or none: where a member
 * dies or stops inside it, every rank's grow fails (HOOP_ERR_UNAVAILABLE; at once where a rank of
 * comm is known gone, else at HOOP_TIMEOUT), no one keeps *newcomm, and its newcomers queue
 * again for the next grow: shrink comm if a rank is gone, then grow again.
 *
 * hoop_init_join: a new process (a replacement a launcher started, say) joins the running job whose store the
 * environment names (HOOP_STORE and HOOP_JOB_TOKEN; HOOP_SIZE is not read, and a HOOP_RANK from a launcher is its
 * number in the job, which must be no other process's), admitted by the next hoop_comm_grow; *comm is that grown
 * communicator, and the newcomer's rank in it is hoop_rank's. Waits up to HOOP_TIMEOUT to be admitted (and again after
 * a grow given up). What a newcomer needs to take part (a model's parameters, a step count) its new peers send it, with
 * a broadcast say. */
hoop_status_t hoop_comm_grow(hoop_comm_t comm, int count, hoop_comm_t* newcomm);
hoop_status_t hoop_init_join(hoop_comm_t* comm);
/* How many new processes wait at the job to be admitted (*count; 0: none): those that called
 * hoop_init_join and no grow has taken yet, such as the replacements elastic hooprun starts
 * (hooprun --min-np/--max-np). A collective on comm (rank 0 reads the job's store and every rank
 * gets its count), so every rank can pass the same count to hoop_comm_grow. With HOOP_JOIN=1 in
 * its environment (elastic hooprun sets it for the processes it starts into a running job),
 * hoop_init_from_env joins as hoop_init_join does. */
hoop_status_t hoop_comm_newcomers(hoop_comm_t comm, int* count);

#ifdef __cplusplus
}
#endif

#endif /* HOOP_HOOP_ELASTIC_H_ */
