// The deterministic schedules: every element's result is one canonical fold over the ranks,
// ((x0 op x1) op x2) ... op x(n-1), in rank order, each step rounded to the dtype (f16 and bf16
// computed in f32 and rounded, as every pairwise kernel does), the average's division on the last
// step. Which rank folds an element, in which block, chunk or message it travels, changes nothing
// of its bits: those depend only on the n values and on n.
//
// Fold (the bandwidth schedule): the buffer is cut into k blocks, one per owner rank: for a
// reduce-scatter(v) every rank owns its own (SplitEven, or the v-layout's); for an allreduce or a
// reduce k = FoldOwners(n, count), one owner per kFoldBlockMin elements, at most n (ranks 0..k-1;
// a reduce's from its root on), so a mid-size call sends 2k(n-1) messages of at least
// kFoldBlockMin elements, not n(n-1) small ones, and a large one is spread over every rank.
//   1. scatter: rank r sends block q of its input straight to owner q, for every q != r (the
//      destinations in rotated order, r+1 first, so no rank is every rank's first target);
//   2. fold: rank q holds the n-1 messages for its block (kHold, staging chunks) and folds them
//      with its own block of `in` in rank order into out (one pass: each input read once, the
//      result written once, so it moves less memory than the ring's n-1 reductions);
//   3. the result goes to every rank (allreduce: each receives block q from rank q straight
//      into out), to the root (reduce), or stays (reduce-scatter).
// With n owners each rank sends and receives (n-1)/n of the buffer in step 1 and again in 3, the
// ring's bytes, over n-1 links at once instead of one; with k, an owner's link carries (n-1)/k.
// It runs chunk-major: chunk c of every step before chunk c+1 of any, so a chunk's n-1 messages
// are in flight together and its fold and its results follow while the next chunk's messages
// come (the window is at least 2(n-1): min_window).
// Every pair's messages travel in the order both sides issue them (the scatter's before the
// result's, chunk by chunk), so a back end that keeps a link's order matches them in order.
// In place, step 3 overwrites block q of `in` only with rank q's answer to this rank's own step-1
// message of it, and the fold reads each element of its own block before it writes it.
//
// On 2 ranks a fold is one reduction, x0 op x1: the step is a plain receive-reduce (the lower
// rank's value on the left), done as the message comes, without holding it.
//
// FoldAll (small allreduce): every rank sends its whole input to every other rank, holds the n-1
// messages and folds every element itself: one hop instead of two, n-1 messages of the whole
// buffer each way, the cheapest where a message's cost is its latency. In place, the fold waits
// until that send has been read (after_sent; the executor drops the wait out of place).
//
// FoldRoot (small calls): the fold with one owner, the root (rank 0 for an allreduce): every rank
// sends its whole input there; a reduce ends with the root's fold, an allreduce's root sends the
// result to every rank. n-1 messages for a reduce, 2(n-1) and two hops for an allreduce where
// FoldAll sends n(n-1) in one, which is what a small call costs where ranks share cores.
#include "collectives/schedules/schedule.h"

#include <algorithm>

namespace hoop {

namespace {

constexpr uint16_t kScatterMsg = 0;
constexpr uint16_t kResultMsg = 1;

// The fold of `count` elements at `offset` on this rank: a kHold receive from every other rank
// and the fold over those and `in`, in rank order, into `out` (on 2 ranks one receive-reduce as
// the message comes, without holding it). Returns the fold step's index.
int AppendFold(Schedule& s, int rank, int n, size_t offset, size_t count) {
  Step fold;
  fold.in_offset = fold.out_offset = offset;
  fold.count = count;
  fold.finalize = true;
  if (n == 2) {  // x0 op x1 is one reduction: reduced as the message comes, no chunk held
    fold.recv = RecvKind::kReduce;
    fold.recv_peer = 1 - rank;
    fold.recv_msg = kScatterMsg;
    fold.recv_left = rank == 1;
    s.steps.push_back(fold);
    return static_cast<int>(s.steps.size()) - 1;
  }
  for (int k = 0; k < n; ++k) {
    if (k == rank) {
      fold.fold.push_back(-1);
      continue;
    }
    Step hold;
    hold.recv = RecvKind::kHold;
    hold.recv_peer = k;
    hold.recv_msg = kScatterMsg;
    hold.in_offset = hold.out_offset = offset;
    hold.count = count;
    fold.fold.push_back(static_cast<int>(s.steps.size()));
    s.steps.push_back(hold);
  }
  s.steps.push_back(fold);
  return static_cast<int>(s.steps.size()) - 1;
}

// Whether rank q is one of the k owners first, first+1, ... (mod n).
bool Owns(int q, int n, int first, int k) { return Mod(q - first, n) < k; }

// Steps 1 and 2 over blocks `b`, of which the k ranks first, first+1, ... (mod n) own one each:
// this rank sends each owner its block and, if it owns one, holds and folds it. Returns the index
// of the fold step (its out block is this rank's own, at b.displs[rank] in `in` and `out`), or -1
// on a rank that owns none.
int AppendScatterFold(Schedule& s, int rank, int n, const Blocks& b, int first, int k) {
  for (int j = 1; j < n; ++j) {
    const int q = Mod(rank + j, n);
    if (!Owns(q, n, first, k)) continue;
    Step send;
    send.send_from_in = true;
    send.send_peers = {q};
    send.send_msg = kScatterMsg;
    send.in_offset = b.displs[static_cast<size_t>(q)];
    send.count = b.counts[static_cast<size_t>(q)];
    s.steps.push_back(send);
  }
  if (!Owns(rank, n, first, k)) return -1;
  const size_t own = static_cast<size_t>(rank);
  return AppendFold(s, rank, n, b.displs[own], b.counts[own]);
}

// The blocks of a fold over k owners, ranks first, first+1, ... (mod n): owner j's is
// SplitEven(count, k, j), everyone else's empty.
Blocks OwnerBlocks(int n, int first, int k, size_t count) {
  Blocks b{std::vector<size_t>(static_cast<size_t>(n), 0), std::vector<size_t>(static_cast<size_t>(n), count)};
  for (int j = 0; j < k; ++j) {
    const Range r = SplitEven(count, k, j);
    const size_t q = static_cast<size_t>(Mod(first + j, n));
    b.counts[q] = r.size;
    b.displs[q] = r.begin;
  }
  return b;
}

// Step 3 on a rank that takes every owner's result: block q from owner q, straight into out.
void AppendResults(Schedule& s, int rank, int n, const Blocks& b, int first, int k) {
  for (int j = 1; j < n; ++j) {
    const int q = Mod(rank - j, n);
    if (!Owns(q, n, first, k)) continue;
    Step got;  // q's answer to this rank's block: in place, it cannot come before that was read
    got.recv = RecvKind::kCopy;
    got.recv_peer = q;
    got.recv_msg = kResultMsg;
    got.out_offset = b.displs[static_cast<size_t>(q)];
    got.count = b.counts[static_cast<size_t>(q)];
    s.steps.push_back(got);
  }
}

Schedule FoldSchedule(int n) {
  Schedule s;
  s.algo = "fold";
  s.chunk_major = true;
  s.min_window = n - 1;
  return s;
}

// Every other rank, r+1 first.
std::vector<int> Others(int rank, int n) {
  std::vector<int> peers;
  for (int k = 1; k < n; ++k) peers.push_back(Mod(rank + k, n));
  return peers;
}

// An allreduce's fold over k owners, ranks 0..k-1: each sends its folded block to every rank.
Schedule OwnersAllreduce(int rank, int n, size_t count, int k) {
  Schedule s = FoldSchedule(n);
  const Blocks b = OwnerBlocks(n, 0, k, count);
  const int fold = AppendScatterFold(s, rank, n, b, 0, k);
  if (fold >= 0) {
    s.steps[static_cast<size_t>(fold)].send_peers = Others(rank, n);
    s.steps[static_cast<size_t>(fold)].send_msg = kResultMsg;
  }
  AppendResults(s, rank, n, b, 0, k);
  return s;
}

// A reduce's fold over k owners, the root first: each sends its folded block to the root.
Schedule OwnersReduce(int rank, int n, int root, size_t count, int k) {
  Schedule s = FoldSchedule(n);
  const Blocks b = OwnerBlocks(n, root, k, count);
  const int fold = AppendScatterFold(s, rank, n, b, root, k);
  if (rank == root) {
    AppendResults(s, rank, n, b, root, k);
  } else if (fold >= 0) {
    s.steps[static_cast<size_t>(fold)].send_peers = {root};
    s.steps[static_cast<size_t>(fold)].send_msg = kResultMsg;
  }
  return s;
}

}  // namespace

int FoldOwners(int n, size_t count) {
  return static_cast<int>(std::clamp<size_t>(count / kFoldBlockMin, 1, static_cast<size_t>(std::max(n, 1))));
}

Schedule FoldAllreduce(int rank, int n, size_t count) { return OwnersAllreduce(rank, n, count, FoldOwners(n, count)); }

Schedule FoldAllAllreduce(int rank, int n, size_t count) {
  Schedule s = FoldSchedule(n);
  s.algo = "fold_all";
  Step send;
  send.send_from_in = true;
  send.send_peers = Others(rank, n);
  send.send_msg = kScatterMsg;
  send.count = count;
  s.steps.push_back(send);
  Step& fold = s.steps[static_cast<size_t>(AppendFold(s, rank, n, 0, count))];
  fold.after_sent = true;  // in place, the fold overwrites what that send reads
  fold.sent_step = 0;
  return s;
}

Schedule FoldRootAllreduce(int rank, int n, size_t count) {
  Schedule s = OwnersAllreduce(rank, n, count, 1);
  s.algo = "fold_root";
  return s;
}

Schedule FoldRootReduce(int rank, int n, int root, size_t count) {
  Schedule s = OwnersReduce(rank, n, root, count, 1);
  s.algo = "fold_root";
  return s;
}

Schedule FoldReduce(int rank, int n, int root, size_t count) {
  return OwnersReduce(rank, n, root, count, FoldOwners(n, count));
}

Schedule FoldReduceScatterv(int rank, int n, const Blocks& b) {
  Schedule s = FoldSchedule(n);
  AppendScatterFold(s, rank, n, b, 0, n);  // every rank keeps its own block
  return s;
}

Schedule FoldReduceScatter(int rank, int n, size_t count) { return FoldReduceScatterv(rank, n, EvenBlocks(n, count)); }

}  // namespace hoop
