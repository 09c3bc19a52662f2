// OpDesc: what a collective call is, as a 64-bit word that travels in every message header
// (Tag::check). Ranks that call different things (another count, dtype, op, root, algorithm,
// compression or collective) find out on their first message and fail with an error that names the difference,
// instead of hanging or reducing garbage.
#pragma once

#include <cstdint>
#include <string>

#include "common/dtype.h"

namespace hoop {

enum class CollKind : uint8_t {
  kAllreduce = 1,
  kBroadcast,
  kAllgather,
  kReduceScatter,
  kBarrier,
  kReduce,
  kGather,
  kScatter,
  kAlltoall,
  kAllgatherv,
  kReduceScatterv,
  kAlltoallv,
};
// From the collective table (coll_table.cc): the name ("?" for a kind that is none), whether the
// root's buffers differ from the others' (which may pass none), whether it takes a ReduceOp.
const char* CollKindName(CollKind k);
bool Rooted(CollKind k);
bool Reduces(CollKind k);

// The root a split's allgather carries (allgather has none): its description then differs from
// any plain allgather's, and a rank that called something else is told "split", not "allgather".
inline constexpr int kSplitRoot = 0xfffe;

struct OpDesc {
  CollKind kind = CollKind::kAllreduce;
  DType dtype = DType::kF32;
  ReduceOp op = ReduceOp::kSum;
  uint8_t algo = 0;  // index into AlgoNames
  int root = -1;
  uint64_t count = 0;
  uint8_t compression = 0;  // Compression (kernels/wire.h) the call runs with: none, fp16, bf16

  uint64_t Pack() const;
  static OpDesc Unpack(uint64_t word);
  // "count 1000 here, 999 on rank 1; dtype f32 here, f64 on rank 1"
  std::string DescribeDifference(const OpDesc& theirs, int peer) const;
};

}  // namespace hoop
