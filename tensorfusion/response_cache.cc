#include "tensorfusion/response_cache.h"

namespace hoop::fusion {

int ResponseCache::Find(const std::string& name, const TensorParams& params) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end() || !slots_[it->second].params.Agrees(params)) return -1;
  return static_cast<int>(it->second);
}

void ResponseCache::Put(const std::string& name, const TensorParams& params) {
  if (capacity_ == 0) return;
  size_t slot;
  auto it = by_name_.find(name);
  if (it != by_name_.end()) {
    slot = it->second;
  } else if (slots_.size() < capacity_) {
    slot = slots_.size();
    slots_.push_back({});
  } else {
    slot = 0;
    for (size_t s = 1; s < slots_.size(); ++s)
      if (slots_[s].used < slots_[slot].used) slot = s;
    by_name_.erase(slots_[slot].name);
  }
  slots_[slot].name = name;
  slots_[slot].params = params;
  slots_[slot].used = ++clock_;
  by_name_[name] = slot;
}

}  // namespace hoop::fusion
