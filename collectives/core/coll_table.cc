// The collective table (coll_table.h): one row per collective. The communicator reads it to check
// a call (rooted, uses, check), to describe it (name, desc_count), to stage its device buffers
// (staging) and to run it (run).
#include "collectives/core/coll_table.h"

#include <iterator>

#include "common/extent.h"

namespace hoop {
namespace {

size_t InCount(const CollCall& c) { return c.in.count; }
size_t OutCount(const CollCall& c) { return c.out.count; }  // non-roots may pass no input
size_t NoCount(const CollCall&) { return 0; }               // alltoallv's counts differ between ranks
size_t OutTotal(const CollCall& c) {                        // allgatherv: the whole output's
  size_t total = 0;
  for (size_t n : c.v->recv.counts) total += n;  // checked not to wrap first (CheckAllgatherv)
  return total;
}
std::string NoCheck(const CollCall&, int, int) { return ""; }

}  // namespace

using enum Uses;
using enum Staging;

constexpr CollRow kCollRows[kCollKinds] = {
    {CollKind::kAllreduce, "allreduce", false, true, kAll, kAll, InCount, CheckAllreduce, RunAllreduce, kPipelined},
    {CollKind::kBroadcast, "broadcast", true, false, kRoot, kAll, OutCount, CheckRootedSame, RunBroadcast,
     kPipelinedRootCopy},
    {CollKind::kAllgather, "allgather", false, false, kAll, kAll, InCount, CheckAllgather, RunAllgather,
     kPipelinedOwnBlock},
    {CollKind::kReduceScatter, "reduce_scatter", false, true, kAll, kAll, InCount, CheckReduceScatter, RunReduceScatter,
     kPipelinedFromScratch},
    {CollKind::kBarrier, "barrier", false, false, kNone, kNone, InCount, NoCheck, RunBarrier, kWhole},
    {CollKind::kReduce, "reduce", true, true, kAll, kRoot, InCount, CheckRootedSame, RunReduce, kWhole},
    {CollKind::kGather, "gather", true, false, kAll, kRoot, InCount, CheckGather, RunGather, kWhole},
    {CollKind::kScatter, "scatter", true, false, kRoot, kAll, OutCount, CheckScatter, RunScatter, kWhole},
    {CollKind::kAlltoall, "alltoall", false, false, kAll, kAll, InCount, CheckAlltoall, RunAlltoall, kWhole},
    {CollKind::kAllgatherv, "allgatherv", false, false, kAll, kAll, OutTotal, CheckAllgatherv, RunAllgatherv, kWhole},
    {CollKind::kReduceScatterv, "reduce_scatterv", false, true, kAll, kAll, InCount, CheckReduceScatterv,
     RunReduceScatterv, kWhole},
    {CollKind::kAlltoallv, "alltoallv", false, false, kAll, kAll, NoCount, CheckAlltoallv, RunAlltoallv, kWhole},
};

// The rows in CollKind's order, kinds numbered from 1 (FindColl indexes them).
constexpr bool InKindOrder() {
  for (size_t i = 0; i < kCollKinds; ++i)
    if (static_cast<size_t>(kCollRows[i].kind) != i + 1) return false;
  return true;
}
static_assert(InKindOrder(), "kCollRows must list the collectives in CollKind's order");

std::string BlocksWrap(size_t count, int size) {
  if (CheckedMul(count, static_cast<size_t>(size))) return "";
  return "count " + std::to_string(count) + " x " + std::to_string(size) + " ranks is 2^64 elements or more";
}

const char* CollKindName(CollKind k) {
  const CollRow* r = FindColl(k);
  return r ? r->name : "?";
}
bool Rooted(CollKind k) {
  const CollRow* r = FindColl(k);
  return r && r->rooted;
}
bool Reduces(CollKind k) {
  const CollRow* r = FindColl(k);
  return r && r->reduces;
}

}  // namespace hoop
