#include "python/torch_ext/store.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace hoop::torch_ext {
namespace {

void Say(char* err, size_t cap, const char* what) { std::snprintf(err, cap, "%s", what); }

// PyTorch's stores say a wait ran out of time in words, not a type ("Socket Timeout",
// "Wait timeout", "Timeout waiting for key").
bool IsTimeout(const char* what) { return std::strstr(what, "imeout") != nullptr; }

int Set(void* ctx, const char* key, const void* value, size_t len, char* err, size_t cap) {
  try {
    const auto* b = static_cast<const uint8_t*>(value);
    static_cast<StoreBridge*>(ctx)->store().set(key, std::vector<uint8_t>(b, b + len));
    return 0;
  } catch (const std::exception& e) {
    Say(err, cap, e.what());
    return 2;
  }
}

int Get(void* ctx, const char* key, long long timeout_ms, void** value, size_t* len, char* err, size_t cap) {
  auto& store = static_cast<StoreBridge*>(ctx)->store();
  try {
    store.wait({key}, std::chrono::milliseconds(timeout_ms));
  } catch (const std::exception& e) {
    Say(err, cap, e.what());
    return IsTimeout(e.what()) ? HOOP_STORE_TIMEOUT : 2;
  }
  try {
    std::vector<uint8_t> v = store.get(key);
    *len = v.size();
    *value = std::malloc(v.empty() ? 1 : v.size());
    if (!*value) {
      Say(err, cap, "out of memory");
      return 2;
    }
    if (!v.empty()) std::memcpy(*value, v.data(), v.size());
    return 0;
  } catch (const std::exception& e) {
    Say(err, cap, e.what());
    return 2;
  }
}

int Add(void* ctx, const char* key, long long delta, long long* result, char* err, size_t cap) {
  try {
    *result = static_cast<StoreBridge*>(ctx)->store().add(key, delta);
    return 0;
  } catch (const std::exception& e) {
    Say(err, cap, e.what());
    return 2;
  }
}

}  // namespace

hoop_store_t StoreBridge::Callbacks() { return hoop_store_t{Set, Get, Add, this}; }

}  // namespace hoop::torch_ext
