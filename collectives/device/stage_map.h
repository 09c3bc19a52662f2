// Where a plan reads its input and when its output is final: what pipelined staging needs to
// move a device buffer to and from host memory piece by piece while the wire carries the rest
// (pipelined_staging.h).
//
// Input: the byte ranges of `in` in the order the plan first reads them (a unit reads `in` when
// its step reduces the message with `in`, or sends from `in`), each byte listed once, cut where
// the reads are cut (chunks). Unit u may read only once ranges [0, need[u]) are in host memory:
// copying them in that order lets the first chunk go on the wire after one chunk's copy instead
// of the whole buffer's. The same list holds the bytes of `out` the plan reads before any unit
// has written them (a range with `out` set): what the caller placed there before the run (an
// allgather's own block, which a hierarchical allgather sends from `out`).
//
// Output: for each unit, the byte ranges of `out` it writes last in plan order (the last writer
// of a byte in issue order is also the last to act on it: two units that write one byte are
// ordered, by a wait of the schedule's or by the data itself, or the schedule would be wrong on
// host memory too). When unit u has acted, final[u]'s ranges hold their result and can be copied
// back. Bytes no unit writes are left alone: the collective does not write them.
//
// Pure: from the plan and the element size only, so it is unit-tested without a device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/core/plan.h"

namespace hoop {

struct ByteRange {
  size_t lo = 0, hi = 0;  // [lo, hi)
  bool out = false;       // StageMap::in: a range of `out` read before the plan writes it
  bool operator==(const ByteRange&) const = default;
};

struct StageMap {
  std::vector<ByteRange> in;       // in first-read order, disjoint on each side
  std::vector<uint32_t> need;      // per unit: ranges of `in` it needs ([0, need[u]))
  std::vector<uint32_t> final_at;  // per unit: its final ranges are final[final_at[u] .. final_at[u + 1])
  std::vector<ByteRange> final;
  size_t written = 0;  // bytes of `out` the plan writes
};

StageMap BuildStageMap(const Plan& plan, size_t esize);

// What unit u of the plan reads of `in`, reads of `out` (a send from it, or a reduction into
// it) and writes of `out` (bytes; empty: none).
ByteRange UnitReadsIn(const Plan& plan, size_t u, size_t esize);
ByteRange UnitReadsOut(const Plan& plan, size_t u, size_t esize);
ByteRange UnitWritesOut(const Plan& plan, size_t u, size_t esize);

}  // namespace hoop
