// Schedules: pure data that says, for one rank, what a collective does, and pure functions that
// build them from rank math alone (no transport, no memory): they are unit-tested by simulating
// every rank at once and checking that every element is reduced exactly once from every rank.
//
// A Schedule is a list of Steps. A step may receive one message (from recv_peer) and then send
// one message to each of send_peers. What it does with what it receives:
//   kCopy   - the message lands straight in `out` at out_offset
//   kReduce - out[out_offset..] = src op message, where src is `in` at in_offset, or `out`
//             itself when `accumulate` (the tree's second child)
// and what it sends: `in` at in_offset (send_from_in) or `out` at out_offset. So the classic
// primitives are: send, recv, recvReduce, recvReduceSend, recvCopySend, recvReduceCopySend.
// And a fold (the deterministic schedules, schedules/fold.cc): kHold receives keep their message
// in its staging chunk; a later step with `fold` (no receive of its own) then writes
// out[out_offset..] = ((s0 op s1) op s2) ... op s(k-1) over those messages and this rank's `in`,
// in the order `fold` lists them, and frees them.
//
// Reductions are written `out = src op message`, or `out = message op src` with recv_left: a
// schedule in which two ranks compute the same element themselves (recursive doubling) puts the
// lower ranks' data on the left on both, so both get the same bits (min/max with a NaN, a NaN's
// payload, differ with the order).
//
// Memory a send reads may be written again later in the schedule only where the data written
// cannot exist before that send was read: it is the peer's answer to it (the ring's results
// coming back), or the step says after_sent. In place, `in` and `out` are the same memory, so
// a step that writes `out` after a send from `in` needs after_sent too; the executor drops the
// wait when they are distinct. The simulator (tests/unit/schedule_test.cc) reads every message
// as late as a transport may, in place and not, and catches a missing after_sent.
//
// The executor cuts every step into chunks of at most `chunk` elements (all ranks cut the same
// message the same way, since it depends only on the step's count) and pipelines them. The order
// in which (step, chunk) units are issued is part of the schedule: step-major for the ring (each
// step streams all its chunks, and the next step follows right behind), chunk-major for trees
// (chunk c goes up and comes back down while chunk c+1 follows it up).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hoop {

enum class RecvKind : uint8_t { kNone, kCopy, kReduce, kHold };

struct Step {
  int recv_peer = -1;
  uint16_t recv_msg = 0;
  RecvKind recv = RecvKind::kNone;
  bool accumulate = false;      // kReduce reads `out` instead of `in`
  bool finalize = false;        // apply the average's division in this reduction
  bool after_previous = false;  // act only after the previous step's same chunk has acted
  bool after_sent = false;      // act only after the previous step's same chunk has been sent
  int sent_step = -1;           // after_sent: this earlier step's instead of the previous one's
  // Earlier steps this one starts on: each of its chunks acts only after every unit of those steps
  // whose `out` range overlaps the chunk's own has acted, in whatever order their chunks complete
  // (a back end may complete one message's chunks out of order). A phase that starts on what
  // earlier steps wrote waits for exactly that, and the steps issued between them run free (the
  // hierarchical allreduce's pipelined parts).
  std::vector<int> after;
  bool recv_left = false;  // kReduce: out = message op src (else src op message)
  // A fold step's operands, left to right: the index of an earlier kHold step of the same count
  // (its message for this chunk), or -1 for `in` at in_offset. Empty: not a fold.
  std::vector<int> fold;
  std::vector<int> send_peers;
  uint16_t send_msg = 0;
  bool send_from_in = false;
  size_t in_offset = 0;   // elements
  size_t out_offset = 0;  // elements
  size_t count = 0;       // elements
};

struct Schedule {
  std::vector<Step> steps;
  bool chunk_major = false;
  // Every unit acts only after the one issued before it (ExpandUnits): a send that gathers what
  // several earlier receives of other lengths brought waits for all of them.
  bool serial = false;
  std::string algo;  // the algorithm's name (algo.h)
  // The executor keeps window x this receives in flight (executor.h): a schedule that keeps
  // phases on different links in flight at once gives each its window, so that the slow link's
  // receives, posted first, do not hold back the fast one's (the hierarchical allreduce: 2).
  int window_scale = 1;
  // Receives this schedule needs in flight at once to make progress (a fold's held messages):
  // the executor's window is at least twice this.
  int min_window = 0;
};

// Element range [begin, begin + size) of part i when `count` is split into n nearly equal parts.
struct Range {
  size_t begin = 0;
  size_t size = 0;
};
Range SplitEven(size_t count, int n, int i);
inline int Mod(int a, int n) { return ((a % n) + n) % n; }

// Block r of a buffer: counts[r] elements from displs[r] (the v-collectives' layouts, MPI's).
struct Blocks {
  std::vector<size_t> counts;
  std::vector<size_t> displs;
};
Blocks EvenBlocks(int n, size_t count);                  // count elements each, back to back
Blocks PackedBlocks(const std::vector<size_t>& counts);  // back to back: displs are prefix sums
// A v-collective's layouts: allgatherv's out (recv), reduce_scatterv's in and working buffer
// (recv), alltoallv's in (send) and out (recv).
struct VBlocks {
  Blocks send;
  Blocks recv;
};

// Allreduce over `count` elements, in -> out (may alias).
Schedule RingAllreduce(int rank, int size, size_t count);
Schedule TreeAllreduce(int rank, int size, size_t count);
// Recursive doubling: log2(n) rounds, in each of which a rank swaps its whole partial result with
// one partner and reduces (ranks beyond a power of two fold in first and get the result last).
// Two ranks: one exchange, one hand-off each way at once, the fewest hops there are.
Schedule DoublingAllreduce(int rank, int size, size_t count);
// Its message numbers: round j's exchange is message j; an extra's fold into its odd partner and
// the result handed back are these (the blocking interpreter, blocking.cc, sends the same messages).
inline constexpr uint16_t kDoublingFoldMsg = 1000;
inline constexpr uint16_t kDoublingResultMsg = 1001;
// Hierarchical allreduce over hosts (`host_of[r]`: rank r's host, any ids; every host must hold
// the same number L of ranks, else this is RingAllreduce): a ring reduce-scatter inside each host
// leaves local rank l with segment l of L, reduced over its host; a ring allreduce of segment l
// among the local ranks l of every host (one ring per local rank, all at once, each carrying 1/L
// of the data across the hosts' links); then a ring allgather inside each host. The buffer goes
// through in parts, pipelined: one part's cross-host phase runs while the next is reduced and
// the one before gathered inside the hosts (each phase waits for its part's phase before it:
// `after`).
// A part per `part_elems` elements, at most 8.
Schedule HierarchicalAllreduce(int rank, const std::vector<int>& host_of, size_t count, size_t part_elems = 1 << 20);
// The same over hosts (schedules/hierarchical_blocks.cc): with every host holding the same number
// L of ranks, each local rank runs a ring across the hosts carrying only its own blocks and its
// host's ring passes them round inside (allgather: across first; reduce-scatter: inside first);
// else the flat ring. Same layouts as RingAllgather and RingReduceScatter.
Schedule HierarchicalAllgather(int rank, const std::vector<int>& host_of, size_t count);
Schedule HierarchicalReduceScatter(int rank, const std::vector<int>& host_of, size_t count);
// Reduce-scatter: in holds size*count elements; the reduced block `rank` ends up in out at
// [rank*count, (rank+1)*count), and out (size*count elements) also takes partial sums.
Schedule RingReduceScatter(int rank, int size, size_t count);
// Allgather: in holds count elements, out size*count; block r of out comes from rank r.
// The caller places the rank's own block.
Schedule RingAllgather(int rank, int size, size_t count);
// The same with block r of out laid out by `out` (allgatherv); in holds the rank's own block.
Schedule RingAllgatherv(int rank, int size, const Blocks& out);
// Reduce-scatter with blocks laid out by `b` in both in and out (reduce_scatterv); the reduced
// block `rank` ends up in out at its displacement.
Schedule RingReduceScatterv(int rank, int size, const Blocks& b);
// Broadcast of `count` elements from root's in to every rank's out (root: the caller copies).
Schedule ChainBroadcast(int rank, int size, int root, size_t count);
Schedule BinomialBroadcast(int rank, int size, int root, size_t count);
// The chain over the ranks taken host by host (the root's host first, root first): each host's
// link carries the data once in and once out however ranks are placed (any host map).
Schedule HierarchicalBroadcast(int rank, const std::vector<int>& host_of, int root, size_t count);
Schedule DisseminationBarrier(int rank, int size);
// Reduce to root's out: a binomial tree (log2 n rounds; chunks flow up it one behind another)
// or a chain (every rank receives, reduces and sends on each chunk once: size / link rate).
// Non-roots' out is a working buffer of `count` elements.
Schedule BinomialReduce(int rank, int size, int root, size_t count);
Schedule ChainReduce(int rank, int size, int root, size_t count);
// Gather: every rank's `count` elements of in go straight into block r of root's out (the root
// places its own). Scatter: block r of root's in goes straight to rank r's out.
Schedule FlatGather(int rank, int size, int root, size_t count);
Schedule FlatScatter(int rank, int size, int root, size_t count);
// Binomial gather and scatter (schedules/binomial_gather.cc): every rank's buffer (root's out for
// gather, root's in for scatter, a working buffer elsewhere) holds the blocks of its subtree in
// order relative to the root: block j is rank (rank + j) mod size's, BinomialSpan(q, size) blocks
// for q = rank - root mod size (size for the root); the caller places the rank's own block at
// block 0 (gather) or takes it from there (scatter), and rotates the root's buffer.
Schedule BinomialGather(int rank, int size, int root, size_t count);
Schedule BinomialScatter(int rank, int size, int root, size_t count);
int BinomialSpan(int q, int size);
// Alltoall, `count` elements per pair: block p of in goes to rank p, block p of out comes from
// rank p (the caller places the rank's own). n-1 rounds: send to rank+k, receive from rank-k.
Schedule PairwiseAlltoall(int rank, int size, size_t count);
// The same with each peer's block of in laid out by `send` and of out by `recv` (alltoallv).
Schedule PairwiseAlltoallv(int rank, int size, const Blocks& send, const Blocks& recv);

// The deterministic schedules (schedules/fold.cc): each element's result is the left fold over
// the ranks in rank order, ((x0 op x1) op x2) ... op x(n-1), each step rounded to the dtype,
// whatever the count, the chunk size or the rank's place. Fold: every rank sends block q of its
// input straight to its owner, rank q, which folds the n contributions to its block and sends the
// result to every rank (allreduce), to the root (reduce), or keeps it (reduce-scatter: block q of
// out; the v-layouts' blocks likewise). An allreduce's or a reduce's fold has FoldOwners(size,
// count) owners, one per kFoldBlockMin elements, 1 to size (ranks 0.. for an allreduce, the root
// first for a reduce). FoldAll (small allreduce): every rank sends its whole input to every rank
// and each folds every element itself: one hop. FoldRoot (small calls): the fold with one owner,
// the root (rank 0 for allreduce): n-1 messages each way.
inline constexpr size_t kFoldBlockMin = 4096;
int FoldOwners(int size, size_t count);
Schedule FoldAllreduce(int rank, int size, size_t count);
Schedule FoldAllAllreduce(int rank, int size, size_t count);
Schedule FoldRootAllreduce(int rank, int size, size_t count);
Schedule FoldReduce(int rank, int size, int root, size_t count);
Schedule FoldRootReduce(int rank, int size, int root, size_t count);
Schedule FoldReduceScatter(int rank, int size, size_t count);
Schedule FoldReduceScatterv(int rank, int size, const Blocks& b);

// Steps that open every rooted collective: each rank sends an empty message to the next and
// takes one from the previous (schedules/broadcast.cc says why). The data's steps follow.
void AppendRollCall(Schedule& s, int rank, int n);

// The binary tree used by TreeAllreduce, over positions 0..n-1: in-order and balanced, so half
// the nodes are leaves. parent[p] is -1 for the root.
struct BinaryTree {
  std::vector<int> parent;
  std::vector<std::vector<int>> children;
  int root = 0;
};
BinaryTree BuildBinaryTree(int n);

// The executor's unit of work: one chunk of one step, in issue order.
struct Unit {
  int step = 0;
  uint32_t chunk = 0;
  size_t offset = 0;  // elements, relative to the step's in_offset / out_offset
  size_t count = 0;
  int dep = -1;            // unit whose action must come first (after_previous), or -1
  std::vector<int> waits;  // further units whose action must come first (Step::after)
  int sent_dep = -1;       // unit whose sends must have completed first (after_sent), or -1
  std::vector<int> fold;   // a fold unit's operands: the kHold units of its chunk, -1 for `in`
};
std::vector<Unit> ExpandUnits(const Schedule& s, size_t chunk_elems);

}  // namespace hoop
