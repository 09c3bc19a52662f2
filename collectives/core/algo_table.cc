// The table of algorithms: one row per (collective, algorithm), with the function that builds
// its schedule (schedules/) and the message sizes auto picks it for. Rows of one collective are
// tried in order; the first whose range holds the call's bytes wins.
//
// Thresholds measured over shm and TCP (docs/PERF.md): below them, fewer hops beat fewer bytes.
// Recursive doubling beat both the tree and the ring up to 32 KiB for 2 to 8 ranks, and lost to
// the ring from 512 KiB (it moves log2(n) whole buffers per rank). The binomial trees of
// broadcast and reduce take log2(n) rounds, the chains n-1 hops but every link busy at once.
// Gather and scatter send every block straight between its rank and the root (the root's link
// carries each block once, the least it can); their binomial trees (the root takes log2(n)
// messages, not n-1, but a block travels log2(n) hops) run when asked for by name: with 4 and 8
// ranks on 2 cores they measured level with flat at best (4-rank shm gather of blocks up to
// 64 B) and up to 2.6x slower, over shm and tcp, blocks of 8 B to 32 KiB (docs/PERF.md), so auto
// waits for a measurement with a core per rank.
// Hierarchical allreduce (rings inside hosts, a ring per local rank across them, in pipelined
// parts) replaces the ring above 64 KiB on jobs spanning 2 or more hosts with the same number
// (2 or more) of ranks on each: on 1 Gbit/s links, 2 hosts x 4 ranks, it measured 1.64x the flat
// ring's algbw at 64 MiB (1.6x to 3.75x from 64 KiB), 4 x 2 1.12-1.17x (perf/linktest,
// docs/PERF.md). Allgather and reduce-scatter take the same rule (their rings across hosts carry
// each rank's own blocks only, inside hosts all of them), and broadcast's chain is taken host by
// host (the same chain where ranks are placed host by host and the root leads its host; with
// ranks interleaved over hosts the rank-order chain crosses hosts at every hop).
// Alltoall exchanges pairwise, n-1 rounds, each rank sending to rank+k while it receives from
// rank-k.
// The v-collectives (per-rank counts) run the same ring and pairwise exchange, one whole block
// per step; their plans depend on the counts and are built per call, not cached.
#include <cstdint>

#include "collectives/core/algo.h"

namespace hoop {
namespace {

constexpr size_t kAll = SIZE_MAX;
constexpr size_t kSmall = 64 << 10;  // doubling and binomial up to here, ring and chain above
// Deterministic calls (HOOP_DETERMINISTIC, a communicator's deterministic mode): the collectives
// that reduce run only the canonical rows (schedules/fold.cc), auto choosing among them by the
// same rule. Up to kFoldSmall, where a message's cost is its latency, fewer messages win: a
// reduce sends everything to the root (fold_root: n-1 messages, not the fold's n(n-1)); an
// allreduce on 2 or 3 ranks sends to everyone (fold_all: one hop), from kFoldRootRanks ranks to
// rank 0 and back (fold_root: 2(n-1) messages, not n(n-1)). On 2 cores, tcp and shm, 3 to 8 ranks
// (docs/PERF.md): fold_root's reduce 2-40x faster than the fold's at 8 B to 16 KiB, 2x slower at
// 256 KiB over tcp; its allreduce 0.5-0.8x fold_all's time over tcp from 4 ranks, level over shm
// (either way, run to run), slower on 2 and 3 ranks over shm. Past 16 KiB fold_root keeps winning
// on one host of 2 cores but loses 1.3-2x on hosts joined by 1 Gbit/s links (its root's link
// carries n-1 whole buffers), so auto stops there; the fold then has few owners (FoldOwners).
constexpr size_t kFoldSmall = 16 << 10;
constexpr int kFoldRootRanks = 4;
// A row auto never picks: it runs only when asked for by name.
constexpr size_t kNamedMin = 1, kNamedMax = 0;

}  // namespace

const std::vector<AlgoRow>& AlgoTable() {
  static const std::vector<AlgoRow> table = {
      {CollKind::kAllreduce, Algo::kDoubling,
       [](const ScheduleArgs& a) { return DoublingAllreduce(a.rank, a.size, a.count); }, 0, kSmall},
      {CollKind::kAllreduce, Algo::kHierarchical,
       [](const ScheduleArgs& a) {
         return a.host_of ? HierarchicalAllreduce(a.rank, *a.host_of, a.count) : RingAllreduce(a.rank, a.size, a.count);
       },
       kSmall + 1, kAll, true},
      {CollKind::kAllreduce, Algo::kRing, [](const ScheduleArgs& a) { return RingAllreduce(a.rank, a.size, a.count); },
       0, kAll},
      {CollKind::kAllreduce, Algo::kTree, [](const ScheduleArgs& a) { return TreeAllreduce(a.rank, a.size, a.count); },
       kNamedMin, kNamedMax},
      {CollKind::kAllreduce, Algo::kFoldRoot,
       [](const ScheduleArgs& a) { return FoldRootAllreduce(a.rank, a.size, a.count); }, 0, kFoldSmall, false, true,
       kFoldRootRanks},
      {CollKind::kAllreduce, Algo::kFoldAll,
       [](const ScheduleArgs& a) { return FoldAllAllreduce(a.rank, a.size, a.count); }, 0, kFoldSmall, false, true},
      {CollKind::kAllreduce, Algo::kFold, [](const ScheduleArgs& a) { return FoldAllreduce(a.rank, a.size, a.count); },
       0, kAll, false, true},
      {CollKind::kBroadcast, Algo::kBinomial,
       [](const ScheduleArgs& a) { return BinomialBroadcast(a.rank, a.size, a.root, a.count); }, 0, kSmall},
      {CollKind::kBroadcast, Algo::kHierarchical,
       [](const ScheduleArgs& a) {
         return a.host_of ? HierarchicalBroadcast(a.rank, *a.host_of, a.root, a.count)
                          : ChainBroadcast(a.rank, a.size, a.root, a.count);
       },
       kSmall + 1, kAll, true},
      {CollKind::kBroadcast, Algo::kChain,
       [](const ScheduleArgs& a) { return ChainBroadcast(a.rank, a.size, a.root, a.count); }, 0, kAll},
      {CollKind::kReduce, Algo::kBinomial,
       [](const ScheduleArgs& a) { return BinomialReduce(a.rank, a.size, a.root, a.count); }, 0, kSmall},
      {CollKind::kReduce, Algo::kChain,
       [](const ScheduleArgs& a) { return ChainReduce(a.rank, a.size, a.root, a.count); }, 0, kAll},
      {CollKind::kReduce, Algo::kFoldRoot,
       [](const ScheduleArgs& a) { return FoldRootReduce(a.rank, a.size, a.root, a.count); }, 0, kFoldSmall, false,
       true},
      {CollKind::kReduce, Algo::kFold,
       [](const ScheduleArgs& a) { return FoldReduce(a.rank, a.size, a.root, a.count); }, 0, kAll, false, true},
      {CollKind::kAllgather, Algo::kHierarchical,
       [](const ScheduleArgs& a) {
         return a.host_of ? HierarchicalAllgather(a.rank, *a.host_of, a.count) : RingAllgather(a.rank, a.size, a.count);
       },
       kSmall + 1, kAll, true},
      {CollKind::kAllgather, Algo::kRing, [](const ScheduleArgs& a) { return RingAllgather(a.rank, a.size, a.count); },
       0, kAll},
      {CollKind::kReduceScatter, Algo::kHierarchical,
       [](const ScheduleArgs& a) {
         return a.host_of ? HierarchicalReduceScatter(a.rank, *a.host_of, a.count)
                          : RingReduceScatter(a.rank, a.size, a.count);
       },
       kSmall + 1, kAll, true},
      {CollKind::kReduceScatter, Algo::kRing,
       [](const ScheduleArgs& a) { return RingReduceScatter(a.rank, a.size, a.count); }, 0, kAll},
      {CollKind::kReduceScatter, Algo::kFold,
       [](const ScheduleArgs& a) { return FoldReduceScatter(a.rank, a.size, a.count); }, 0, kAll, false, true},
      {CollKind::kGather, Algo::kBinomial,
       [](const ScheduleArgs& a) { return BinomialGather(a.rank, a.size, a.root, a.count); }, kNamedMin, kNamedMax},
      {CollKind::kGather, Algo::kFlat,
       [](const ScheduleArgs& a) { return FlatGather(a.rank, a.size, a.root, a.count); }, 0, kAll},
      {CollKind::kScatter, Algo::kBinomial,
       [](const ScheduleArgs& a) { return BinomialScatter(a.rank, a.size, a.root, a.count); }, kNamedMin, kNamedMax},
      {CollKind::kScatter, Algo::kFlat,
       [](const ScheduleArgs& a) { return FlatScatter(a.rank, a.size, a.root, a.count); }, 0, kAll},
      {CollKind::kAllgatherv, Algo::kRing,
       [](const ScheduleArgs& a) { return RingAllgatherv(a.rank, a.size, a.v->recv); }, 0, kAll},
      {CollKind::kReduceScatterv, Algo::kRing,
       [](const ScheduleArgs& a) { return RingReduceScatterv(a.rank, a.size, a.v->recv); }, 0, kAll},
      {CollKind::kReduceScatterv, Algo::kFold,
       [](const ScheduleArgs& a) { return FoldReduceScatterv(a.rank, a.size, a.v->recv); }, 0, kAll, false, true},
      {CollKind::kAlltoallv, Algo::kPairwise,
       [](const ScheduleArgs& a) { return PairwiseAlltoallv(a.rank, a.size, a.v->send, a.v->recv); }, 0, kAll},
      {CollKind::kAlltoall, Algo::kPairwise,
       [](const ScheduleArgs& a) { return PairwiseAlltoall(a.rank, a.size, a.count); }, 0, kAll},
      {CollKind::kBarrier, Algo::kDissemination,
       [](const ScheduleArgs& a) { return DisseminationBarrier(a.rank, a.size); }, 0, kAll},
  };
  return table;
}

}  // namespace hoop
