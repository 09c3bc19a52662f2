// Small parsers shared by Config and the tools: sizes with K/M/G suffixes (powers of 1024),
// plain integers and seconds. They reject trailing junk instead of guessing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace hoop {

std::optional<uint64_t> ParseSize(const std::string& text);  // "64M" -> 67108864
std::optional<int64_t> ParseInt(const std::string& text);
std::optional<double> ParseSeconds(const std::string& text);      // "30", "0.5"
std::optional<double> ParseNonNegative(const std::string& text);  // like ParseSeconds, 0 allowed
std::string FormatBytes(uint64_t bytes);                          // 67108864 -> "64M"

}  // namespace hoop
