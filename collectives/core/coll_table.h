// The collective table: one row per collective, as algo_table.cc has one per algorithm. A row
// says what the collective is (name, rooted, whether it reduces), which ranks read its input and
// write its output, the count every rank passes alike, the shape its buffers must have, how its
// device buffers are staged, and its run: a free function over a CallContext, the few things a
// collective asks of the communicator beneath it. Adding a collective: its file (run and check),
// its row in coll_table.cc, its call on the front (communicator.h) and its C API line.
#pragma once

#include <cstddef>
#include <string>

#include "collectives/core/coll_call.h"
#include "common/status.h"

namespace hoop {

// What one call's run may ask of its communicator (CommCore::CallRun implements it).
class CallContext {
 public:
  virtual ~CallContext() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The call's algorithm, the same on every rank (algo.h's choice for its kind and size).
  virtual StatusOr<Algo> Resolve() const = 0;
  // How an allreduce's data travel: none, fp16 or bf16, with auto decided (compression_policy.cc).
  virtual StatusOr<Compression> Wire() = 0;
  // A copy between the call's buffers (memmove on the host; on the device run's queue there).
  virtual Status Place(void* dst, const void* src, size_t bytes) = 0;
  // A working buffer of `count` elements, valid until the call ends (grown, never shrunk).
  virtual Buffer Scratch(size_t count, DType dtype) = 0;
  // Runs the plan of (the call's kind, algo, count) from in to out: by the executor or, for a
  // plan of one small chunk on host memory, by the blocking interpreter on this thread
  // (blocking.cc).
  virtual Status RunSchedule(Algo algo, size_t count, const Buffer& in, const Buffer& out,
                             Compression wire = Compression::kNone) = 0;
};

// Which ranks use a buffer of the call: every rank, the root alone, or none.
enum class Uses : uint8_t { kNone, kAll, kRoot };

// How a call's device buffers are staged through pinned host memory where the transport does not
// move them itself (device_staging.cc): whole (copied in before the run and back after it), or
// piece by piece beside the wire (pipelined_staging.h), with the output's own block placed on the
// device first (kOwnBlock: allgather's) or the root's input (kRootCopy: broadcast's), or the
// result's own block copied back from a host working copy (kFromScratch: reduce-scatter's).
enum class Staging : uint8_t { kWhole, kPipelined, kPipelinedRootCopy, kPipelinedOwnBlock, kPipelinedFromScratch };

struct CollRow {
  CollKind kind;
  const char* name;
  bool rooted;   // the root's buffers differ from the others' (which may pass none)
  bool reduces;  // takes a ReduceOp
  Uses in, out;
  // The count every rank passes alike (OpDesc's, the algorithm choice's): the collective's own.
  size_t (*desc_count)(const CollCall& c);
  // The buffers' shape for `rank` of `size` ranks, beyond what every call is checked for (sizes,
  // dtypes, null pointers, the root): "" when well-formed, else why not.
  std::string (*check)(const CollCall& c, int rank, int size);
  Status (*run)(CallContext& ctx, const CollCall& c);
  Staging staging;
};

// The rows, in CollKind's order (coll_table.cc checks it): a lookup is an index, inline, as it
// is on every call's path several times.
inline constexpr size_t kCollKinds = 12;
extern const CollRow kCollRows[kCollKinds];
// The row of `k`; null for a kind that is none (an unpacked word from a peer).
inline const CollRow* FindColl(CollKind k) {
  const size_t i = static_cast<size_t>(k) - 1;  // kinds number from 1; kind 0 wraps past the end
  return i < kCollKinds ? &kCollRows[i] : nullptr;
}
inline const CollRow& Row(CollKind k) { return kCollRows[static_cast<size_t>(k) - 1]; }
inline size_t DescCount(const CollCall& c) { return Row(c.kind).desc_count(c); }
// Whether `rank` reads c's input / writes c's output (a rooted collective's other ranks may not).
inline bool Used(Uses u, const CollCall& c, int rank) {
  return u == Uses::kAll || (u == Uses::kRoot && c.root == rank);
}
inline bool UsesIn(const CollCall& c, int rank) { return Used(Row(c.kind).in, c, rank); }
inline bool UsesOut(const CollCall& c, int rank) { return Used(Row(c.kind).out, c, rank); }

// For the checks of collectives with one block per rank: "" when `count` x `size` ranks is below
// 2^64 elements, else why not (the products the checks compare must not wrap).
std::string BlocksWrap(size_t count, int size);

// The collectives' own code, each in its file (allreduce.cc, broadcast.cc, ...): runs and checks.
Status RunAllreduce(CallContext& ctx, const CollCall& c);
Status RunBroadcast(CallContext& ctx, const CollCall& c);
Status RunAllgather(CallContext& ctx, const CollCall& c);
Status RunReduceScatter(CallContext& ctx, const CollCall& c);
Status RunBarrier(CallContext& ctx, const CollCall& c);
Status RunReduce(CallContext& ctx, const CollCall& c);
Status RunGather(CallContext& ctx, const CollCall& c);
Status RunScatter(CallContext& ctx, const CollCall& c);
Status RunAlltoall(CallContext& ctx, const CollCall& c);
Status RunAllgatherv(CallContext& ctx, const CollCall& c);
Status RunReduceScatterv(CallContext& ctx, const CollCall& c);
Status RunAlltoallv(CallContext& ctx, const CollCall& c);
std::string CheckAllreduce(const CollCall& c, int rank, int size);
std::string CheckRootedSame(const CollCall& c, int rank, int size);  // broadcast, reduce
std::string CheckAllgather(const CollCall& c, int rank, int size);
std::string CheckReduceScatter(const CollCall& c, int rank, int size);
std::string CheckGather(const CollCall& c, int rank, int size);
std::string CheckScatter(const CollCall& c, int rank, int size);
std::string CheckAlltoall(const CollCall& c, int rank, int size);
std::string CheckAllgatherv(const CollCall& c, int rank, int size);
std::string CheckReduceScatterv(const CollCall& c, int rank, int size);
std::string CheckAlltoallv(const CollCall& c, int rank, int size);

}  // namespace hoop
