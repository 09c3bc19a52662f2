// The response cache: Horovod's trick for making negotiation nearly free in steady state.
//
// Training submits the same tensors, with the same parameters, step after step. Once the
// coordinator has answered for a name, every rank stores that response in the same slot of its
// cache, because every rank applies the same responses in the same order. From then on a rank
// that has that tensor ready just sets the slot's bit; one small allreduce that takes the
// minimum over ranks (a logical AND) tells every rank which cached tensors are ready everywhere,
// and those run without a word to the coordinator.
//
// The cache stays identical on every rank because it changes only through Put (a response, in
// the agreed order) and Touch (a hit, which every rank sees alike). When full, Put evicts the
// least recently used slot (the lowest slot on ties) and reuses its index. Capacity 0 turns the
// cache off: every tensor then goes through the coordinator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensorfusion/request.h"

namespace hoop::fusion {

class ResponseCache {
 public:
  explicit ResponseCache(size_t capacity) : capacity_(capacity) {}

  // The slot that holds `name` with exactly `params`, or -1 (not cached, or cached with other
  // parameters, which only the coordinator may settle).
  int Find(const std::string& name, const TensorParams& params) const;
  // Slots in use: the length of the bit vector.
  size_t size() const { return slots_.size(); }
  const std::string& name(size_t slot) const { return slots_[slot].name; }
  const TensorParams& params(size_t slot) const { return slots_[slot].params; }

  void Put(const std::string& name, const TensorParams& params);
  void Touch(size_t slot) { slots_[slot].used = ++clock_; }

 private:
  struct Slot {
    std::string name;
    TensorParams params;
    uint64_t used = 0;
  };
  size_t capacity_;
  uint64_t clock_ = 0;
  std::vector<Slot> slots_;
  std::unordered_map<std::string, size_t> by_name_;
};

}  // namespace hoop::fusion
