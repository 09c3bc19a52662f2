/* One cell of the failure matrix (tests/launch/chaos_test.cc draws the cells), as every rank of a
 * job under hooprun --enable-recovery, including only <hoop/hoop.h>:
 *
 *   hoop-c-chaos-test kill|stop VICTIM WHERE [MARKER]
 *
 * VICTIM (a rank; "first", "middle" for size / 2, "last") dies (SIGKILL) or stops (SIGSTOP; a
 * child of its own continues it CHAOS_STOP_S seconds later, default 9) at WHERE:
 *   init        before it calls hoop_init_from_env: the others' init fails (the job cannot start
 *               without it), at once for a killed rank (hooprun --enable-recovery reports it),
 *               at HOOP_TIMEOUT for a stopped one, naming it; each prints
 *               "c-chaos init failed rank R" and ends well
 *   start       right after init, before its first call
 *   allreduce, broadcast, allgather, reduce_scatter, alltoall, barrier
 *               inside a run of that collective (a thread of its own raises the signal a few
 *               milliseconds into its third call)
 *   p2p         inside a ring exchange of hoop_isend/hoop_irecv (each rank to the next)
 *   fusion      inside the tensor fusion runtime's allreduces (hoop_fusion_*)
 *   shrink      inside a shrink every rank calls (no one lost before it)
 *   grow        inside a grow admitting one newcomer (this program with "join", started by the
 *               lowest rank that is not VICTIM)
 * Every other rank runs the same calls, each checked against a reference, until one fails; then
 * it revokes the communicator (so that no one stays inside a call waiting on a live rank) and
 * shrinks it, again until a checked call on the result works (a member that died after the shrink
 * agreed costs one more). A grow the victim broke is made again on the shrunk communicator, so
 * the newcomer is admitted all the same. On the survivors' communicator each rank checks its size
 * and number (the survivors in order, then the newcomer) and WHERE's calls at counts 0, 1, 7 and
 * 1001 against the reference, and prints
 *   "c-chaos ok rank R of N -> R' of N', longest call S s".
 * A stopped victim, once continued, finds its calls failing and its shrink leaving it out, and
 * prints "c-chaos left out rank R". MARKER (ignored) lets the test find every process it started.
 * Every rank checks that no call of its own took longer than
 * HOOP_TIMEOUT plus a second: a failure is never waited past it. */
#include <hoop/hoop.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int g_rank = -1; /* in the job (a newcomer: 100 + its rank in the grown communicator) */
#define CHECK_TAG "c-chaos"
#define CHECK_RANK g_rank
#include "tests/launch/c_check.h"

enum Where {
  INIT,
  START,
  ALLREDUCE,
  BROADCAST,
  ALLGATHER,
  REDUCE_SCATTER,
  ALLTOALL,
  BARRIER,
  P2P,
  FUSION,
  SHRINK,
  GROW
};
static const char* const kWhere[] = {"init",     "start",   "allreduce", "broadcast", "allgather", "reduce_scatter",
                                     "alltoall", "barrier", "p2p",       "fusion",    "shrink",    "grow"};
enum { kWheres = sizeof(kWhere) / sizeof(kWhere[0]), kMaxRanks = 16, kMaxCount = 1001 };

typedef struct {
  hoop_comm_t comm;
  hoop_fusion_t fusion; /* WHERE fusion: the runtime driving comm, else NULL */
  int n, me;
  int job[kMaxRanks]; /* each member's g_rank */
} Group;

static int g_stop;             /* the victim stops rather than dies */
static volatile int g_stopped; /* this rank was stopped: its calls' times include the stop */
static double g_longest;       /* the longest call of this rank, seconds */
static double g_timeout = 60;  /* HOOP_TIMEOUT */
static int g_serial;           /* fusion tensors' names */
static int g_send[kMaxRanks * (kMaxCount + 1)], g_recv[kMaxRanks * (kMaxCount + 1)];

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A value no other (rank, block, index) gives; sums of 17 of them fit an int. */
static int V(int job_rank, int block, int i) { return (job_rank * 64 + block) * 2048 + i; }

/* The victim's end: SIGKILL, or SIGSTOP with a child that sends SIGCONT later. */
static void Strike(void) {
  if (!g_stop) {
    printf("c-chaos rank %d killed at %.6f\n", g_rank, Now());
    fflush(stdout);
    raise(SIGKILL);
  }
  const pid_t me = getpid();
  const char* env = getenv("CHAOS_STOP_S");
  const unsigned later = env ? (unsigned)atoi(env) : 9;
  if (fork() == 0) {
    sleep(later);
    kill(me, SIGCONT);
    _exit(0);
  }
  printf("c-chaos rank %d stopped at %.6f\n", g_rank, Now());
  fflush(stdout);
  g_stopped = 1;
  raise(SIGSTOP);
}

static void* StrikeSoon(void* arg) {
  (void)arg;
  struct timespec pause = {0, (long)(1 + g_rank % 5) * 1000 * 1000};
  nanosleep(&pause, NULL);
  Strike();
  return NULL;
}

/* The victim's call may return before its thread strikes: it goes no further until then. */
static void AwaitStrike(void) {
  while (!g_stopped) {
    struct timespec pause = {0, 1000 * 1000};
    nanosleep(&pause, NULL);
  }
}

static void StrikeInside(void) {
  pthread_t t;
  pthread_create(&t, NULL, StrikeSoon, NULL);
  pthread_detach(t);
}

static void Timed(double started) {
  const double took = Now() - started;
  if (took > g_longest) g_longest = took;
  CHECK(g_stopped || took <= g_timeout + 1, "a call took %.1f s, past HOOP_TIMEOUT (%.0f s)", took, g_timeout);
}

static hoop_status_t P2p(const Group* g, int c) {
  if (g->n == 1) { /* a ring of one: to itself */
    memcpy(g_recv, g_send, sizeof(int) * (size_t)c);
    return HOOP_SUCCESS;
  }
  const int next = (g->me + 1) % g->n, prev = (g->me + g->n - 1) % g->n;
  hoop_request_t req[2];
  hoop_status_t s = hoop_irecv(g->comm, g_recv, (size_t)c, HOOP_I32, prev, 7, NULL, &req[0]);
  if (s != HOOP_SUCCESS) return s;
  s = hoop_isend(g->comm, g_send, (size_t)c, HOOP_I32, next, 7, &req[1]);
  if (s != HOOP_SUCCESS) {
    hoop_wait(req[0]);
    return s;
  }
  s = hoop_wait(req[0]);
  const hoop_status_t t = hoop_wait(req[1]);
  return s != HOOP_SUCCESS ? s : t;
}

static hoop_status_t Fused(const Group* g, int c) {
  char name[32];
  snprintf(name, sizeof name, "chaos/%d", g_serial++);
  hoop_handle_t h = 0;
  hoop_status_t s =
      hoop_fusion_allreduce(g->fusion, name, g_send, g_recv, (size_t)c, HOOP_I32, HOOP_SUM, NULL, NULL, NULL, &h);
  return s != HOOP_SUCCESS ? s : hoop_fusion_wait(g->fusion, h);
}

/* One call of kind `w` with c elements (per block), not yet checked. */
static hoop_status_t Run(int w, const Group* g, int c) {
  const size_t n = (size_t)c;
  switch (w) {
    case BROADCAST: return hoop_broadcast(g->comm, g_send, g_recv, n, HOOP_I32, c % g->n);
    case ALLGATHER: return hoop_allgather(g->comm, g_send, g_recv, n, HOOP_I32);
    case REDUCE_SCATTER: return hoop_reduce_scatter(g->comm, g_send, g_recv, n, HOOP_I32, HOOP_SUM);
    case ALLTOALL: return hoop_alltoall(g->comm, g_send, g_recv, n, HOOP_I32);
    case BARRIER: return hoop_barrier(g->comm);
    case P2P: return P2p(g, c);
    case FUSION: return g->fusion ? Fused(g, c) : hoop_allreduce(g->comm, g_send, g_recv, n, HOOP_I32, HOOP_SUM);
    default: return hoop_allreduce(g->comm, g_send, g_recv, n, HOOP_I32, HOOP_SUM);
  }
}

/* What element i of block b of the result must be. */
static int Want(int w, const Group* g, int c, int b, int i) {
  int sum = 0;
  switch (w) {
    case BROADCAST: return V(g->job[c % g->n], 0, i);
    case ALLGATHER: return V(g->job[b], 0, i);
    case REDUCE_SCATTER:
      for (int k = 0; k < g->n; ++k) sum += V(g->job[k], g->me, i);
      return sum;
    case ALLTOALL: return V(g->job[b], g->me, i);
    case P2P: return V(g->job[(g->me + g->n - 1) % g->n], g->me, i);
    default:
      for (int k = 0; k < g->n; ++k) sum += V(g->job[k], 0, i);
      return sum;
  }
}

/* One call of kind `w` with c elements, checked against the reference where it succeeds. */
static hoop_status_t Checked(int w, const Group* g, int c) {
  const int blocks = w == ALLGATHER || w == ALLTOALL ? g->n : 1;
  for (int b = 0; b < g->n; ++b)
    for (int i = 0; i < c; ++i)
      g_send[b * c + i] = V(g_rank, (w == ALLTOALL || w == REDUCE_SCATTER || w == P2P) ? b : 0, i);
  if (w == P2P) /* the ring sends one block: the one meant for the next rank */
    for (int i = 0; i < c; ++i) g_send[i] = V(g_rank, (g->me + 1) % g->n, i);
  memset(g_recv, 0xff, sizeof(int) * (size_t)(blocks * c + 1));
  const double started = Now();
  const hoop_status_t s = Run(w, g, c);
  Timed(started);
  if (s != HOOP_SUCCESS || w == BARRIER) return s;
  for (int b = 0; b < blocks; ++b)
    for (int i = 0; i < c; ++i)
      CHECK(g_recv[b * c + i] == Want(w, g, c, b, i), "%s of %d on %d ranks: block %d element %d is %d, not %d",
            kWhere[w], c, g->n, b, i, g_recv[b * c + i], Want(w, g, c, b, i));
  return s;
}

static hoop_comm_t g_world;
static int g_grow_pending; /* a grow the victim broke, to make again after the shrink */
static pid_t g_newcomer = -1;

/* A failure a lost or stopped rank may cause: anything else is wrong. */
static void Expected(hoop_status_t s, const char* what) {
  CHECK(s == HOOP_ERR_UNAVAILABLE || s == HOOP_ERR_ABORTED || s == HOOP_ERR_REVOKED || s == HOOP_ERR_TIMEOUT,
        "%s failed with %s, not as a lost rank makes it fail: %s", what, hoop_status_string(s), hoop_last_error());
}

/* g's members (an allgather of each one's job rank). */
static hoop_status_t Fill(Group* g) {
  CHECK(hoop_rank(g->comm, &g->me) == HOOP_SUCCESS && hoop_size(g->comm, &g->n) == HOOP_SUCCESS, "rank/size");
  CHECK(g->n <= kMaxRanks, "size %d", g->n);
  const double started = Now();
  const hoop_status_t s = hoop_allgather(g->comm, &g_rank, g->job, 1, HOOP_I32);
  Timed(started);
  return s;
}

static void LeftOut(void) {
  printf("c-chaos left out rank %d (%s)\n", g_rank, hoop_last_error());
  fflush(stdout);
  hoop_finalize(g_world);
  exit(0);
}

static void Grow(Group* g) {
  hoop_comm_t grown = NULL;
  const double started = Now();
  const hoop_status_t s = hoop_comm_grow(g->comm, 1, &grown);
  Timed(started);
  if (s != HOOP_SUCCESS) {
    Expected(s, "grow");
    g_grow_pending = 1;
    return;
  }
  if (g->comm != g_world) hoop_comm_free(g->comm);
  g->comm = grown;
  g_grow_pending = 0;
}

/* After a failure: revoke (where asked), shrink, and make a broken grow again. */
static void Recover(Group* g, int revoke) {
  if (g->fusion) {
    const double started = Now();
    hoop_fusion_stop(g->fusion); /* fails what has not run: the communicator is broken */
    Timed(started);
    g->fusion = NULL;
  }
  if (revoke) CHECK(hoop_comm_revoke(g->comm, "c-chaos: a call failed") == HOOP_SUCCESS, "revoke");
  hoop_comm_t shrunk = NULL;
  const double started = Now();
  const hoop_status_t s = hoop_comm_shrink(g->comm, &shrunk);
  Timed(started);
  if (s == HOOP_ERR_UNAVAILABLE && strstr(hoop_last_error(), "left out")) LeftOut();
  CHECK(s == HOOP_SUCCESS, "shrink: %s", hoop_last_error());
  if (g->comm != g_world) hoop_comm_free(g->comm);
  g->comm = shrunk;
  if (g_grow_pending) Grow(g);
  CHECK(!g_grow_pending, "the grow made again after the shrink failed: %s", hoop_last_error());
}

/* WHERE's calls on the survivors' communicator at counts 0, 1, 7 and 1001. */
static hoop_status_t Final(Group* g, int w) {
  hoop_status_t s = Fill(g);
  if (s == HOOP_SUCCESS && w == FUSION) {
    g_serial = 0; /* tensor names from 0 again: the ranks may have failed at different steps */
    CHECK(hoop_fusion_start(g->comm, &g->fusion) == HOOP_SUCCESS, "fusion start: %s", hoop_last_error());
  }
  const int kind = w == START || w == SHRINK || w == GROW ? ALLREDUCE : w;
  for (int c = 0; s == HOOP_SUCCESS && c <= kMaxCount; c += c < 1 ? 1 : (c < 7 ? 6 : 994)) s = Checked(kind, g, c);
  if (s == HOOP_SUCCESS && g->fusion) {
    s = hoop_fusion_stop(g->fusion);
    g->fusion = NULL;
  }
  return s;
}

/* The checks, recovering again where a member died after its shrink agreed. */
static void Finish(Group* g, int w, int size, int victim) {
  int rounds = 0;
  for (hoop_status_t s; (s = Final(g, w)) != HOOP_SUCCESS;) {
    Expected(s, "a call on the survivors' communicator");
    CHECK(++rounds < 4, "%d shrinks and still no working communicator", rounds);
    Recover(g, 1);
  }
  /* The members: the survivors in their order, then the newcomer (job rank 100 and up). */
  CHECK(g->job[g->me] == g_rank, "member %d is job rank %d, not this one (%d)", g->me, g->job[g->me], g_rank);
  for (int k = 0; k < g->n; ++k) {
    CHECK(k == 0 || g->job[k] > g->job[k - 1], "member %d is job rank %d, after %d", k, g->job[k], g->job[k - 1]);
    CHECK(g->job[k] != victim, "rank %d, struck, is member %d", victim, k);
  }
  const int want = size - 1 + (w == GROW);
  CHECK(size == 0 || g->n == want, "%d survivors, not %d", g->n, want); /* size 0: a newcomer, who cannot tell */
  if (size == 0)
    printf("c-chaos ok rank %d, newcomer -> %d of %d, longest call %.2f s\n", g_rank, g->me, g->n, g_longest);
  else
    printf("c-chaos ok rank %d of %d -> %d of %d, longest call %.2f s\n", g_rank, size, g->me, g->n, g_longest);
  fflush(stdout);
}

static void StartNewcomer(const char* self, const char* marker) {
  g_newcomer = fork();
  CHECK(g_newcomer >= 0, "fork");
  if (g_newcomer > 0) return;
  const char* drop[] = {"HOOP_RANK", "HOOP_SIZE", "HOOP_LOCAL_RANK", "HOOP_LOCAL_SIZE", "RANK", "WORLD_SIZE"};
  for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); ++i) unsetenv(drop[i]);
  execl(self, self, "join", marker, (char*)NULL);
  _exit(127);
}

static int Newcomer(void) {
  Group g = {0}; /* not timed: a grow the victim broke sends it back in line, to wait HOOP_TIMEOUT again */
  CHECK(hoop_init_join(&g.comm) == HOOP_SUCCESS, "hoop_init_join: %s", hoop_last_error());
  g_world = g.comm;
  CHECK(hoop_rank(g.comm, &g_rank) == HOOP_SUCCESS, "rank");
  g_rank += 100;
  Finish(&g, GROW, 0, -1);
  if (g.comm != g_world) hoop_comm_free(g.comm);
  hoop_finalize(g_world);
  return 0;
}

/* The run of WHERE's calls the victim strikes inside, until one fails on this rank. Bounded by
 * time, not by count: two ranks' barriers over shared memory run thousands of calls before the
 * victim's thread, napping a few milliseconds on a busy machine, gets a core. */
static void RunUntilFailure(Group* g, int w, int victim) {
  if (w == FUSION) CHECK(hoop_fusion_start(g->comm, &g->fusion) == HOOP_SUCCESS, "fusion start: %s", hoop_last_error());
  const double began = Now();
  for (int step = 0;; ++step) {
    if (g_rank == victim && step == 2) StrikeInside();
    const hoop_status_t s = Checked(w == START ? ALLREDUCE : w, g, step % 3 ? 64 : kMaxCount);
    if (s != HOOP_SUCCESS) {
      Expected(s, kWhere[w]);
      return;
    }
    CHECK(g_stopped || Now() - began < 20, "20 s of calls (%d) passed, rank %d not gone", step + 1, victim);
  }
}

static int Victim(const char* v, int size) {
  if (strcmp(v, "first") == 0) return 0;
  if (strcmp(v, "middle") == 0) return size / 2;
  if (strcmp(v, "last") == 0) return size - 1;
  return atoi(v);
}

/* WHERE init: the victim (by HOOP_RANK and HOOP_SIZE, as hooprun sets them) strikes before its
 * init; everyone's init fails, the victim's too once continued. */
static int InitFails(const char* v) {
  CHECK(getenv("HOOP_RANK") && getenv("HOOP_SIZE"), "init: run under hooprun (HOOP_RANK, HOOP_SIZE)");
  g_rank = atoi(getenv("HOOP_RANK"));
  if (g_rank == Victim(v, atoi(getenv("HOOP_SIZE")))) Strike();
  const double started = Now();
  const hoop_status_t s = hoop_init_from_env(&g_world);
  Timed(started);
  CHECK(s != HOOP_SUCCESS, "init passed, rank %s gone", v);
  Expected(s, "init");
  printf("c-chaos init failed rank %d (%s)\n", g_rank, hoop_last_error());
  fflush(stdout);
  return 0;
}

int main(int argc, char** argv) {
  CheckUsage(argc, argv,
             "kill|stop VICTIM WHERE [MARKER] | join [MARKER]\n  one cell of the failure matrix: VICTIM (a rank, "
             "first, middle or last) is killed or stopped at\n  WHERE (init, start, allreduce, broadcast, allgather, "
             "reduce_scatter, alltoall, barrier, p2p,\n  fusion, shrink, grow); the others recover. Run as every rank "
             "of a job under\n  hooprun --enable-recovery.");
  if (getenv("HOOP_TIMEOUT")) g_timeout = atof(getenv("HOOP_TIMEOUT"));
  if (argc >= 2 && strcmp(argv[1], "join") == 0) return Newcomer();
  CHECK(argc == 4 || argc == 5, "usage: hoop-c-chaos-test kill|stop VICTIM WHERE [MARKER] | join [MARKER]");
  g_stop = strcmp(argv[1], "stop") == 0;
  int w = 0;
  while (w < kWheres && strcmp(argv[3], kWhere[w]) != 0) ++w;
  CHECK(w < kWheres && (g_stop || strcmp(argv[1], "kill") == 0), "usage: kill|stop VICTIM WHERE (%s?)", argv[3]);
  Group g = {0};
  if (w == INIT) return InitFails(argv[2]);
  CHECK(hoop_init_from_env(&g_world) == HOOP_SUCCESS, "init: %s", hoop_last_error());
  g.comm = g_world;
  CHECK(hoop_rank(g_world, &g_rank) == HOOP_SUCCESS && hoop_size(g_world, &g.n) == HOOP_SUCCESS, "rank/size");
  const int size = g.n, victim = Victim(argv[2], size);
  CHECK(victim >= 0 && victim < size && size <= kMaxRanks - 1, "victim %d of %d", victim, size);
  g.me = g_rank;
  for (int k = 0; k < size; ++k) g.job[k] = k;
  if (w == START && g_rank == victim) Strike();
  if (w == SHRINK || w == GROW) {
    CHECK(Checked(ALLREDUCE, &g, kMaxCount) == HOOP_SUCCESS, "the first allreduce: %s", hoop_last_error());
    if (w == GROW && g_rank == (victim == 0 ? 1 : 0)) StartNewcomer(argv[0], argc == 5 ? argv[4] : "");
    if (g_rank == victim) StrikeInside();
    if (w == GROW)
      Grow(&g);
    else
      Recover(&g, 0);
    if (g_rank == victim) AwaitStrike();
    if (g_grow_pending) Recover(&g, 1);
  } else {
    RunUntilFailure(&g, w, victim);
    Recover(&g, 1);
  }
  Finish(&g, w, size, victim);
  if (g.comm != g_world) hoop_comm_free(g.comm);
  hoop_finalize(g_world);
  if (g_newcomer > 0) {
    int st = 0;
    CHECK(waitpid(g_newcomer, &st, 0) == g_newcomer && WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "the newcomer ended with %d", st);
  }
  return 0;
}
