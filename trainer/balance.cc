#include "trainer/balance.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "common/parse.h"

namespace hoop::train {

std::vector<int> EqualShares(int ranks, int per_rank) { return std::vector<int>(ranks, per_rank); }

std::vector<int> SharesBySpeed(const std::vector<double>& speeds, int total) {
  const int n = static_cast<int>(speeds.size());
  if (n == 0) return {};
  const bool usable = std::all_of(speeds.begin(), speeds.end(), [](double s) { return std::isfinite(s) && s > 0; });
  std::vector<double> w = usable ? speeds : std::vector<double>(n, 1.0);
  const double sum = std::accumulate(w.begin(), w.end(), 0.0);
  std::vector<int> shares(n, 0);
  std::vector<std::pair<double, int>> remainders;
  int given = 0;
  for (int r = 0; r < n; ++r) {
    const double exact = total * w[r] / sum;
    shares[r] = static_cast<int>(std::floor(exact));
    given += shares[r];
    remainders.emplace_back(exact - shares[r], r);
  }
  std::stable_sort(remainders.begin(), remainders.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (int i = 0; i < total - given; ++i) ++shares[remainders[i % n].second];
  // Every rank keeps at least one image while there are enough, taken from the largest share.
  if (total >= n)
    for (int r = 0; r < n; ++r)
      if (shares[r] == 0) {
        --*std::max_element(shares.begin(), shares.end());
        shares[r] = 1;
      }
  return shares;
}

StatusOr<std::vector<int>> ParseShares(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  int64_t sum = 0;
  for (std::string item; std::getline(in, item, ',');) {
    auto v = ParseInt(item);
    if (!v || *v < 0 || *v > 65536)
      return InvalidArgument("--shares '" + text + "': '" + item + "' is not an integer in [0, 65536]");
    out.push_back(static_cast<int>(*v));
    sum += *v;
  }
  if (out.empty() || sum == 0)
    return InvalidArgument("--shares '" + text + "': expected one image count per rank, not all 0");
  return out;
}

std::string FormatShares(const std::vector<int>& shares) {
  std::string s;
  for (size_t i = 0; i < shares.size(); ++i) {
    if (i) s += '/';
    s += std::to_string(shares[i]);
  }
  return s;
}

}  // namespace hoop::train
