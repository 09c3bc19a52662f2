// See suggest.h: optimal-string-alignment distance, the classic dynamic programme over two rows
// plus the one before them (for swaps).
#include "common/suggest.h"

#include <algorithm>
#include <cctype>

namespace hoop {
namespace {

std::string Lower(const std::string& s) {
  std::string out = s;
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

size_t Distance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<size_t> before(m + 1), prev(m + 1), cur(m + 1);
  for (size_t j = 0; j <= m; ++j) prev[j] = j;
  for (size_t i = 1; i <= n; ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= m; ++j) {
      const size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], before[j - 2] + 1);
    }
    std::swap(before, prev);
    std::swap(prev, cur);
  }
  return prev[m];
}

}  // namespace

std::string Nearest(const std::string& word, const std::vector<std::string>& known) {
  const std::string w = Lower(word);
  const size_t limit = w.size() <= 4 ? 1 : w.size() <= 12 ? 2 : 3;
  std::string best;
  size_t best_d = limit + 1;
  for (const auto& k : known) {
    const size_t d = Distance(w, Lower(k));
    if (d < best_d) best_d = d, best = k;
  }
  return best;
}

}  // namespace hoop
