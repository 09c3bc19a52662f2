// What `hoop-test-rank deterministic` prints (tests/support/det_rank.cc), read back: each rank's
// digest of its results, to compare runs that must give the same bits.
#pragma once

#include <map>
#include <regex>
#include <string>

namespace hoop::test {

// "rank R: deterministic ok digest D" lines: rank -> D ("FAILED" where the rank's checks failed).
inline std::map<int, std::string> DetDigests(const std::string& output) {
  std::map<int, std::string> d;
  static const std::regex line("rank (\\d+): deterministic (\\w+) digest ([0-9a-f]+)");
  for (auto it = std::sregex_iterator(output.begin(), output.end(), line); it != std::sregex_iterator(); ++it)
    d[std::stoi((*it)[1])] = (*it)[2] == "ok" ? (*it)[3].str() : "FAILED";
  return d;
}

}  // namespace hoop::test
