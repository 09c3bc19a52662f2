// Which agreed tensors run together. Every rank calls PlanFusion on the same agreed list, so
// every rank runs the same groups in the same order.
//
// Tensors fuse when one collective can serve them all: the same collective, dtype, op, root,
// compression and memory kind (scale factors are applied per tensor while packing, so they may
// differ). Going down the list, each tensor joins the open group of its kind while the group's
// fusion buffer stays within `threshold` bytes, and otherwise opens a new one; a tensor larger
// than the threshold, or one submitted unfused (TensorParams::unfused), runs alone, straight
// from the caller's buffers. Groups run in the order they were opened. Threshold 0 turns
// fusion off.
#pragma once

#include <cstdint>
#include <vector>

#include "tensorfusion/request.h"

namespace hoop::fusion {

struct FusionGroup {
  std::vector<size_t> members;  // indices into the agreed list, in list order
  uint64_t bytes = 0;           // the fusion buffer it needs (TensorParams::FusedBytes summed)
};

bool CanFuse(const TensorParams& a, const TensorParams& b);
std::vector<FusionGroup> PlanFusion(const std::vector<TensorParams>& agreed, uint64_t threshold, int nranks);

}  // namespace hoop::fusion
