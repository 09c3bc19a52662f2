#include "transport/store/memory_store.h"

#include <cstdlib>

namespace hoop {

int64_t DecodeCounter(const std::string& value) { return value.empty() ? 0 : std::strtoll(value.c_str(), nullptr, 10); }

std::optional<int64_t> AddToCounter(const std::string& value, int64_t delta) {
  int64_t sum = 0;
  if (__builtin_add_overflow(DecodeCounter(value), delta, &sum)) return std::nullopt;
  return sum;
}

Status MemoryStore::Set(const std::string& key, const std::string& value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    data_[key] = value;
  }
  cv_.notify_all();
  return Status::Ok();
}

StatusOr<std::string> MemoryStore::Get(const std::string& key, Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  bool found = cv_.wait_until(lock, deadline.at(), [&] { return data_.count(key) > 0; });
  if (!found) return DeadlineExceeded("store: key '" + key + "' did not appear in time");
  return data_[key];
}

StatusOr<int64_t> MemoryStore::Add(const std::string& key, int64_t delta) {
  int64_t v;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto sum = AddToCounter(data_[key], delta);
    if (!sum) return InvalidArgument("store: adding " + std::to_string(delta) + " to '" + key + "' would overflow");
    v = *sum;
    data_[key] = std::to_string(v);
  }
  cv_.notify_all();
  return v;
}

StatusOr<std::string> MemoryStore::SetIfAbsent(const std::string& key, const std::string& value, Deadline) {
  std::string held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    held = data_.emplace(key, value).first->second;
  }
  cv_.notify_all();
  return held;
}

StatusOr<std::string> Store::SetIfAbsent(const std::string& key, const std::string& value, Deadline deadline) {
  HOOP_ASSIGN_OR_RETURN(int64_t ticket, Add(key + "/.ticket", 1));
  if (ticket == 1) {
    HOOP_RETURN_IF_ERROR(Set(key, value));
    return value;
  }
  return Get(key, deadline);
}

}  // namespace hoop
