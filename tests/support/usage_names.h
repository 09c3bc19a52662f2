// Docs that match: which of a tool's flags (each alias, from its cli::Flags) its usage text
// does not name as a word (-n inside -np does not count).
#pragma once

#include <cctype>
#include <string>
#include <vector>

namespace hoop::testing {

inline bool UsageNames(const std::string& text, const std::string& flag) {
  auto name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; };
  for (size_t at = text.find(flag); at != std::string::npos; at = text.find(flag, at + 1)) {
    bool before = at == 0 || !name_char(text[at - 1]);
    bool after = at + flag.size() == text.size() || !name_char(text[at + flag.size()]);
    if (before && after) return true;
  }
  return false;
}

inline std::vector<std::string> MissingFromUsage(const std::string& usage, const std::vector<std::string>& flags) {
  std::vector<std::string> missing;
  for (const std::string& f : flags)
    if (!UsageNames(usage, f)) missing.push_back(f);
  return missing;
}

}  // namespace hoop::testing
