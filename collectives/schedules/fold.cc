// The deterministic schedules: every element's result is one canonical fold over the ranks,
// ((x0 op x1) op x2) ... op x(n-1), in rank order, each step rounded to the dtype (f16 and bf16
// computed in f32 and rounded, as every pairwise kernel does), the average's division on the last
// step. Which rank folds an element, in which block, chunk or message it travels, changes nothing
// of its bits: those depend only on the n values and on n.
//
// Fold (the bandwidth schedule): the buffer is cut into n blocks (SplitEven, or the v-layout's).
//   1. scatter: rank r sends block q of its input straight to rank q, for every q != r (the
//      destinations in rotated order, r+1 first, so no rank is every rank's first target);
//   2. fold: rank q holds the n-1 messages for its block (kHold, staging chunks) and folds them
//      with its own block of `in` in rank order into out (one pass: each input read once, the
//      result written once, so it moves less memory than the ring's n-1 reductions);
//   3. the result goes to every rank (allreduce: each receives block q from rank q straight
//      into out), to the root (reduce), or stays (reduce-scatter).
// Each rank sends and receives (n-1)/n of the buffer in step 1 and again in 3, the ring's bytes,
// over n-1 links at once instead of one. It runs chunk-major: chunk c of every step before chunk
// c+1 of any, so a chunk's n-1 messages are in flight together and its fold and its results
// follow while the next chunk's messages come (the window is at least 2(n-1): min_window).
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
// FoldRoot (small calls): every rank sends its whole input to the root (rank 0 for an
// allreduce), which folds every element; a reduce ends there, an allreduce's root sends the result
// to every rank. n-1 messages for a reduce where Fold sends n(n-1) (a block to every rank, empty
// or not); 2(n-1) and two hops for an allreduce where FoldAll sends n(n-1) in one, which is what
// a small call costs where ranks share cores.
#include "collectives/schedules/schedule.h"

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

// Steps 1 and 2 over blocks `b`: returns the index of the fold step (its out block is this
// rank's own, at b.displs[rank] in both `in` and `out`).
int AppendScatterFold(Schedule& s, int rank, int n, const Blocks& b) {
  for (int k = 1; k < n; ++k) {
    const size_t q = static_cast<size_t>(Mod(rank + k, n));
    Step send;
    send.send_from_in = true;
    send.send_peers = {static_cast<int>(q)};
    send.send_msg = kScatterMsg;
    send.in_offset = b.displs[q];
    send.count = b.counts[q];
    s.steps.push_back(send);
  }
  const size_t own = static_cast<size_t>(rank);
  return AppendFold(s, rank, n, b.displs[own], b.counts[own]);
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

}  // namespace

Schedule FoldAllreduce(int rank, int n, size_t count) {
  Schedule s = FoldSchedule(n);
  Blocks b;
  for (int q = 0; q < n; ++q) {
    const Range r = SplitEven(count, n, q);
    b.counts.push_back(r.size);
    b.displs.push_back(r.begin);
  }
  const int fold = AppendScatterFold(s, rank, n, b);
  s.steps[static_cast<size_t>(fold)].send_peers = Others(rank, n);
  s.steps[static_cast<size_t>(fold)].send_msg = kResultMsg;
  for (int k = 1; k < n; ++k) {
    const size_t q = static_cast<size_t>(Mod(rank - k, n));
    Step got;
    got.recv = RecvKind::kCopy;
    got.recv_peer = static_cast<int>(q);
    got.recv_msg = kResultMsg;
    got.out_offset = b.displs[q];
    got.count = b.counts[q];
    s.steps.push_back(got);
  }
  return s;
}

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

// FoldRoot's first hop, to `root`: the others send their whole input, the root holds and folds.
// Returns the root's fold step, or -1 elsewhere.
int AppendFoldAtRoot(Schedule& s, int rank, int n, int root, size_t count) {
  if (rank == root) return AppendFold(s, rank, n, 0, count);
  Step send;
  send.send_from_in = true;
  send.send_peers = {root};
  send.send_msg = kScatterMsg;
  send.count = count;
  s.steps.push_back(send);
  return -1;
}

Schedule FoldRootAllreduce(int rank, int n, size_t count) {
  Schedule s = FoldSchedule(n);
  s.algo = "fold_root";
  const int fold = AppendFoldAtRoot(s, rank, n, 0, count);
  if (fold >= 0) {
    s.steps[static_cast<size_t>(fold)].send_peers = Others(0, n);
    s.steps[static_cast<size_t>(fold)].send_msg = kResultMsg;
    return s;
  }
  Step got;  // rank 0's answer to this rank's send: in place, it cannot come before that was read
  got.recv = RecvKind::kCopy;
  got.recv_peer = 0;
  got.recv_msg = kResultMsg;
  got.count = count;
  s.steps.push_back(got);
  return s;
}

Schedule FoldRootReduce(int rank, int n, int root, size_t count) {
  Schedule s = FoldSchedule(n);
  s.algo = "fold_root";
  AppendFoldAtRoot(s, rank, n, root, count);
  return s;
}

Schedule FoldReduce(int rank, int n, int root, size_t count) {
  Schedule s = FoldSchedule(n);
  Blocks b;
  for (int q = 0; q < n; ++q) {
    const Range r = SplitEven(count, n, q);
    b.counts.push_back(r.size);
    b.displs.push_back(r.begin);
  }
  const int fold = AppendScatterFold(s, rank, n, b);
  if (rank != root) {
    s.steps[static_cast<size_t>(fold)].send_peers = {root};
    s.steps[static_cast<size_t>(fold)].send_msg = kResultMsg;
    return s;
  }
  for (int k = 1; k < n; ++k) {
    const size_t q = static_cast<size_t>(Mod(rank - k, n));
    Step got;
    got.recv = RecvKind::kCopy;
    got.recv_peer = static_cast<int>(q);
    got.recv_msg = kResultMsg;
    got.out_offset = b.displs[q];
    got.count = b.counts[q];
    s.steps.push_back(got);
  }
  return s;
}

Schedule FoldReduceScatterv(int rank, int n, const Blocks& b) {
  Schedule s = FoldSchedule(n);
  AppendScatterFold(s, rank, n, b);
  return s;
}

Schedule FoldReduceScatter(int rank, int n, size_t count) { return FoldReduceScatterv(rank, n, EvenBlocks(n, count)); }

}  // namespace hoop
