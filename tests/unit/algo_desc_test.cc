#include <catch2/catch.hpp>

#include "collectives/core/algo.h"
#include "collectives/core/op_desc.h"

using namespace hoop;

TEST_CASE("an operation description survives the wire and names differences", "[desc]") {
  OpDesc a{CollKind::kAllreduce, DType::kF32, ReduceOp::kSum, static_cast<uint8_t>(Algo::kRing), -1, 1000};
  OpDesc b = OpDesc::Unpack(a.Pack());
  CHECK(b.Pack() == a.Pack());
  CHECK(b.count == 1000);
  CHECK(b.root == -1);
  OpDesc c = a;
  c.count = 999;
  c.dtype = DType::kF64;
  std::string d = a.DescribeDifference(OpDesc::Unpack(c.Pack()), 3);
  CHECK(d.find("count 1000 here, 999 on rank 3") != std::string::npos);
  CHECK(d.find("dtype f32 here, f64 on rank 3") != std::string::npos);
  OpDesc bc{CollKind::kBroadcast, DType::kU8, ReduceOp::kSum, static_cast<uint8_t>(Algo::kChain), 2, 10};
  OpDesc bc2 = bc;
  bc2.root = 0;
  CHECK(bc.DescribeDifference(bc2, 1).find("root 2 here, 0 on rank 1") != std::string::npos);
  CHECK(a.DescribeDifference(bc, 1).find("collective allreduce here, broadcast on rank 1") != std::string::npos);
}

TEST_CASE("algorithm choice: per call, then HOOP_ALGO, then by size", "[algo]") {
  CHECK(ChooseAlgo(CollKind::kAllreduce, 1 << 20, 4, Algo::kAuto, Algo::kAuto).algo == Algo::kRing);
  CHECK(ChooseAlgo(CollKind::kAllreduce, 1024, 4, Algo::kAuto, Algo::kAuto).algo == Algo::kDoubling);
  CHECK(ChooseAlgo(CollKind::kAllreduce, 64 << 10, 2, Algo::kAuto, Algo::kAuto).algo == Algo::kDoubling);
  CHECK(ChooseAlgo(CollKind::kAllreduce, (64 << 10) + 4, 2, Algo::kAuto, Algo::kAuto).algo == Algo::kRing);
  CHECK(ChooseAlgo(CollKind::kAllreduce, 1024, 4, Algo::kTree, Algo::kAuto).algo == Algo::kTree);
  CHECK(ChooseAlgo(CollKind::kAllreduce, 1024, 4, Algo::kAuto, Algo::kDoubling).algo == Algo::kDoubling);
  CHECK(ParseAlgo("doubling") == Algo::kDoubling);
  CHECK(ChooseAlgo(CollKind::kAllreduce, 1 << 20, 4, Algo::kAuto, Algo::kTree).algo == Algo::kTree);
  CHECK(ChooseAlgo(CollKind::kAllreduce, 1024, 4, Algo::kRing, Algo::kTree).algo == Algo::kRing);
  CHECK(ChooseAlgo(CollKind::kBroadcast, 1 << 20, 4, Algo::kAuto, Algo::kTree).algo == Algo::kChain);
  CHECK(ChooseAlgo(CollKind::kBroadcast, 100, 4, Algo::kAuto, Algo::kAuto).algo == Algo::kBinomial);
  CHECK_FALSE(ChooseAlgo(CollKind::kAllgather, 100, 4, Algo::kTree, Algo::kAuto).error.empty());
}

TEST_CASE("hierarchical collectives: auto above 64 KiB on even hosts, by name anywhere, HOOP_ALGO=ring forbids it",
          "[algo]") {
  CHECK(EvenHosts({0, 0, 1, 1}));
  CHECK(EvenHosts({0, 1, 0, 1}));
  CHECK(EvenHosts({0, 0, 0, 1, 1, 1, 2, 2, 2}));
  CHECK_FALSE(EvenHosts({0, 0, 0, 0}));  // one host
  CHECK_FALSE(EvenHosts({0, 1, 2, 3}));  // one rank per host
  CHECK_FALSE(EvenHosts({0, 0, 1}));     // uneven
  CHECK_FALSE(EvenHosts({}));
  const size_t big = 1 << 20;
  CHECK(ChooseAlgo(CollKind::kAllreduce, big, 4, Algo::kAuto, Algo::kAuto, true).algo == Algo::kHierarchical);
  CHECK(ChooseAlgo(CollKind::kAllreduce, (64 << 10) + 4, 4, Algo::kAuto, Algo::kAuto, true).algo ==
        Algo::kHierarchical);
  CHECK(ChooseAlgo(CollKind::kAllreduce, 64 << 10, 4, Algo::kAuto, Algo::kAuto, true).algo == Algo::kDoubling);
  CHECK(ChooseAlgo(CollKind::kAllreduce, big, 4, Algo::kAuto, Algo::kAuto, false).algo == Algo::kRing);
  CHECK(ChooseAlgo(CollKind::kAllreduce, big, 4, Algo::kAuto, Algo::kRing, true).algo == Algo::kRing);
  CHECK(ChooseAlgo(CollKind::kAllreduce, 1024, 4, Algo::kAuto, Algo::kHierarchical).algo == Algo::kHierarchical);
  // The same rule for allgather, reduce-scatter and broadcast; none for reduce, gather, alltoall.
  for (CollKind k : {CollKind::kAllgather, CollKind::kReduceScatter, CollKind::kBroadcast}) {
    CHECK(ChooseAlgo(k, big, 4, Algo::kAuto, Algo::kAuto, true).algo == Algo::kHierarchical);
    CHECK(ChooseAlgo(k, big, 4, Algo::kAuto, Algo::kAuto, false).algo != Algo::kHierarchical);
    const Algo flat = k == CollKind::kBroadcast ? Algo::kChain : Algo::kRing;  // HOOP_ALGO keeps the flat one
    CHECK(ChooseAlgo(k, big, 4, Algo::kAuto, flat, true).algo == flat);
  }
  CHECK(ChooseAlgo(CollKind::kBroadcast, 1024, 4, Algo::kAuto, Algo::kAuto, true).algo == Algo::kBinomial);
  CHECK(ChooseAlgo(CollKind::kReduce, big, 4, Algo::kAuto, Algo::kHierarchical, true).algo == Algo::kChain);
  CHECK(ParseAlgo("hierarchical") == Algo::kHierarchical);
}

TEST_CASE("deterministic calls: reductions run the folds whatever is named, the rest choose as ever", "[algo]") {
  const auto det = [](CollKind k, size_t bytes, Algo call, Algo env) {
    return ChooseAlgo(k, bytes, 4, call, env, /*even_hosts=*/true, /*deterministic=*/true).algo;
  };
  // Small: fold_root from 4 ranks (2(n-1) messages), fold_all below (one hop); then fold.
  CHECK(det(CollKind::kAllreduce, 8, Algo::kAuto, Algo::kAuto) == Algo::kFoldRoot);
  CHECK(det(CollKind::kAllreduce, 16 << 10, Algo::kAuto, Algo::kAuto) == Algo::kFoldRoot);
  CHECK(det(CollKind::kAllreduce, (16 << 10) + 4, Algo::kAuto, Algo::kAuto) == Algo::kFold);
  for (int n : {1, 2, 3}) {
    CHECK(ChooseAlgo(CollKind::kAllreduce, 8, n, Algo::kAuto, Algo::kAuto, false, true).algo == Algo::kFoldAll);
    CHECK(ChooseAlgo(CollKind::kAllreduce, 16 << 10, n, Algo::kAuto, Algo::kAuto, false, true).algo == Algo::kFoldAll);
  }
  CHECK(ChooseAlgo(CollKind::kAllreduce, 8, 8, Algo::kAuto, Algo::kAuto, false, true).algo == Algo::kFoldRoot);
  // A small reduce goes straight to its root; a large one is folded block by block.
  CHECK(det(CollKind::kReduce, 8, Algo::kAuto, Algo::kAuto) == Algo::kFoldRoot);
  CHECK(det(CollKind::kReduce, 16 << 10, Algo::kAuto, Algo::kAuto) == Algo::kFoldRoot);
  CHECK(det(CollKind::kReduce, (16 << 10) + 4, Algo::kAuto, Algo::kAuto) == Algo::kFold);
  for (Algo a : {Algo::kRing, Algo::kTree, Algo::kDoubling, Algo::kHierarchical}) {
    CHECK(det(CollKind::kAllreduce, 64 << 20, a, Algo::kAuto) == Algo::kFold);
    CHECK(det(CollKind::kAllreduce, 64 << 20, Algo::kAuto, a) == Algo::kFold);
  }
  CHECK(det(CollKind::kAllreduce, 64 << 20, Algo::kFoldAll, Algo::kAuto) == Algo::kFoldAll);
  CHECK(det(CollKind::kAllreduce, 8, Algo::kAuto, Algo::kFold) == Algo::kFold);
  CHECK(det(CollKind::kReduce, 8, Algo::kBinomial, Algo::kAuto) == Algo::kFoldRoot);
  CHECK(det(CollKind::kReduce, 1 << 20, Algo::kBinomial, Algo::kAuto) == Algo::kFold);
  CHECK(det(CollKind::kReduceScatter, 1 << 20, Algo::kAuto, Algo::kHierarchical) == Algo::kFold);
  CHECK(det(CollKind::kReduceScatterv, 1 << 20, Algo::kRing, Algo::kAuto) == Algo::kFold);
  // What does not reduce is unchanged.
  CHECK(det(CollKind::kBroadcast, 1 << 20, Algo::kAuto, Algo::kAuto) == Algo::kHierarchical);
  CHECK(det(CollKind::kAllgather, 100, Algo::kRing, Algo::kAuto) == Algo::kRing);
  // Not deterministic: auto never picks a fold, a name still runs one.
  CHECK(ChooseAlgo(CollKind::kAllreduce, 8, 4, Algo::kAuto, Algo::kAuto).algo == Algo::kDoubling);
  CHECK(ChooseAlgo(CollKind::kAllreduce, 8, 4, Algo::kFold, Algo::kAuto).algo == Algo::kFold);
  CHECK(ChooseAlgo(CollKind::kAllreduce, 8, 4, Algo::kAuto, Algo::kFoldAll).algo == Algo::kFoldAll);
  CHECK_FALSE(ChooseAlgo(CollKind::kBroadcast, 8, 4, Algo::kFold, Algo::kAuto).error.empty());
  CHECK(ParseAlgo("fold") == Algo::kFold);
  CHECK(ParseAlgo("fold_all") == Algo::kFoldAll);
  CHECK(ParseAlgo("fold_root") == Algo::kFoldRoot);
  CHECK(det(CollKind::kAllreduce, 64 << 20, Algo::kFoldRoot, Algo::kAuto) == Algo::kFoldRoot);
  CHECK(det(CollKind::kReduce, 8, Algo::kFoldRoot, Algo::kAuto) == Algo::kFoldRoot);
  CHECK(det(CollKind::kReduceScatter, 8, Algo::kFoldRoot, Algo::kAuto) == Algo::kFold);  // not a reduce_scatter
}
