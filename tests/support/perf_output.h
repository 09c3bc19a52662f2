// What the hoop-perf tests read from its output (perf_test.cc, perf_flags_test.cc).
#pragma once

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace hoop::test {

// Rank 0's table rows, split into fields: size count type redop root algo iters, then per place
// time spread algbw busbw #wrong [err/bnd].
inline std::vector<std::vector<std::string>> Rows(const std::string& out) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream is(out);
  std::string line;
  while (std::getline(is, line)) {
    if (line.find("[0] ") != 0 || line.find('#') != std::string::npos) continue;
    std::istringstream ls(line.substr(4));
    std::vector<std::string> f;
    for (std::string x; ls >> x;) f.push_back(x);
    if (!f.empty() && f[0].find_first_not_of("0123456789") == std::string::npos) rows.push_back(f);
  }
  return rows;
}

// The measurements (a row holds one or two: out of place and in place) whose #wrong is `wrong`.
inline int RowsWithWrong(const std::string& out, const std::string& wrong, bool compressed = false) {
  int n = 0;
  const size_t group = compressed ? 6 : 5;
  for (const auto& f : Rows(out))
    for (size_t at = 7 + 4; at < f.size(); at += group) n += f[at] == wrong;
  return n;
}

inline std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

}  // namespace hoop::test
