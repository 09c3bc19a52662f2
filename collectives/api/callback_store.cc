#include "collectives/api/callback_store.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

namespace hoop {
namespace {

constexpr size_t kErrCap = 512;

Status Failed(const char* call, const std::string& key, int rc, const char* err) {
  std::string why = err[0] ? err : "code " + std::to_string(rc);
  return Unavailable(std::string("the caller's store: ") + call + " '" + key + "' failed: " + why);
}

}  // namespace

Status CallbackStore::Set(const std::string& key, const std::string& value) {
  char err[kErrCap] = {0};
  int rc = fns_.set(fns_.ctx, key.c_str(), value.data(), value.size(), err, kErrCap - 1);
  return rc == 0 ? Status::Ok() : Failed("set", key, rc, err);
}

StatusOr<std::string> CallbackStore::Get(const std::string& key, Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline.at() - Deadline::Clock::now());
  const long long ms = std::max<long long>(1, left.count());
  char err[kErrCap] = {0};
  void* value = nullptr;
  size_t len = 0;
  int rc = fns_.get(fns_.ctx, key.c_str(), ms, &value, &len, err, kErrCap - 1);
  if (rc == HOOP_STORE_TIMEOUT) {
    std::free(value);
    return DeadlineExceeded("the caller's store: '" + key + "' did not appear within " + std::to_string(ms) + " ms" +
                            (err[0] ? std::string(" (") + err + ")" : ""));
  }
  if (rc != 0) {
    std::free(value);
    return Failed("get", key, rc, err);
  }
  std::string out(static_cast<const char*>(value), value ? len : 0);
  std::free(value);
  return out;
}

StatusOr<int64_t> CallbackStore::Add(const std::string& key, int64_t delta) {
  char err[kErrCap] = {0};
  long long result = 0;
  int rc = fns_.add(fns_.ctx, key.c_str(), delta, &result, err, kErrCap - 1);
  if (rc != 0) return Failed("add", key, rc, err);
  return static_cast<int64_t>(result);
}

}  // namespace hoop
