#include "tensorfusion/fusion_planner.h"

namespace hoop::fusion {

bool CanFuse(const TensorParams& a, const TensorParams& b) {
  return a.kind == b.kind && a.dtype == b.dtype && a.op == b.op && a.root == b.root && a.compression == b.compression &&
         a.mem == b.mem && !a.unfused && !b.unfused;
}

std::vector<FusionGroup> PlanFusion(const std::vector<TensorParams>& agreed, uint64_t threshold, int nranks) {
  std::vector<FusionGroup> groups;
  std::vector<size_t> open;  // groups still taking members, at most one per kind of tensor
  for (size_t i = 0; i < agreed.size(); ++i) {
    const TensorParams& p = agreed[i];
    uint64_t bytes = p.FusedBytes(nranks);
    size_t* slot = nullptr;
    for (size_t& g : open)
      if (CanFuse(agreed[groups[g].members[0]], p)) slot = &g;
    if (slot && groups[*slot].bytes + bytes <= threshold) {
      groups[*slot].members.push_back(i);
      groups[*slot].bytes += bytes;
      continue;
    }
    groups.push_back({{i}, bytes});
    if (bytes >= threshold || p.unfused) continue;  // alone: nothing else fits with it
    if (slot)
      *slot = groups.size() - 1;
    else
      open.push_back(groups.size() - 1);
  }
  return groups;
}

}  // namespace hoop::fusion
