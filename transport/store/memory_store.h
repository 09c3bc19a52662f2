// MemoryStore: a Store for the threads of one process (unit tests, single-process use).
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>

#include "transport/store/store.h"

namespace hoop {

class MemoryStore : public Store {
 public:
  Status Set(const std::string& key, const std::string& value) override;
  StatusOr<std::string> Get(const std::string& key, Deadline deadline) override;
  StatusOr<int64_t> Add(const std::string& key, int64_t delta) override;
  StatusOr<std::string> SetIfAbsent(const std::string& key, const std::string& value, Deadline deadline) override;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> data_;
};

// Shared helpers for stores that keep counters as decimal text.
int64_t DecodeCounter(const std::string& value);
// A counter's stored text plus delta, or nullopt where the sum would overflow (every store's
// Add refuses that rather than wrap).
std::optional<int64_t> AddToCounter(const std::string& value, int64_t delta);

}  // namespace hoop
