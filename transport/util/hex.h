// Hex text for binary addresses (UCX worker addresses, libfabric endpoint names) that travel
// through the Store as text.
#pragma once

#include <string>
#include <vector>

namespace hoop {

inline std::string Hex(const void* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<const unsigned char*>(p)[i];
    s += d[c >> 4];
    s += d[c & 15];
  }
  return s;
}

// False on odd length or a non-hex digit.
inline bool Unhex(const std::string& s, std::vector<unsigned char>* out) {
  if (s.size() % 2) return false;
  auto v = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
  for (size_t i = 0; i < s.size(); i += 2) {
    int hi = v(s[i]), lo = v(s[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<unsigned char>(hi * 16 + lo));
  }
  return true;
}

}  // namespace hoop
