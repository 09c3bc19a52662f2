// CallbackStore: hoop's Store over a store of the caller's (hoop_store_t, the C API's
// hoop_init_store), such as PyTorch's c10d::Store reached through a framework binding. Each call
// goes straight to the caller's function; failures become Statuses naming the key and carrying
// the caller's message; a get that times out is kDeadlineExceeded, as with hoop's own stores.
#pragma once

#include "hoop/hoop.h"
#include "transport/store/store.h"

namespace hoop {

class CallbackStore : public Store {
 public:
  explicit CallbackStore(const hoop_store_t& fns) : fns_(fns) {}
  Status Set(const std::string& key, const std::string& value) override;
  StatusOr<std::string> Get(const std::string& key, Deadline deadline) override;
  StatusOr<int64_t> Add(const std::string& key, int64_t delta) override;

 private:
  hoop_store_t fns_;
};

}  // namespace hoop
