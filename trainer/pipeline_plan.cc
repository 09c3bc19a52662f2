#include "trainer/pipeline_plan.h"

#include <algorithm>
#include <limits>

namespace hoop::train {

std::vector<int> SplitLayers(const std::vector<double>& times, int stages) {
  const int n = static_cast<int>(times.size());
  std::vector<double> prefix(n + 1, 0.0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + times[i];
  const double inf = std::numeric_limits<double>::infinity();
  // best[k][j]: the least slowest-stage time of the first j layers in k stages; cut[k][j]: where
  // the k-th stage starts in that split.
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<int>> cut(stages + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0;
  for (int k = 1; k <= stages; ++k)
    for (int j = k; j <= n; ++j)
      for (int i = k - 1; i < j; ++i) {  // the k-th stage is layers [i, j)
        const double t = std::max(best[k - 1][i], prefix[j] - prefix[i]);
        if (t < best[k][j]) {
          best[k][j] = t;
          cut[k][j] = i;
        }
      }
  std::vector<int> first(stages);
  for (int k = stages, j = n; k >= 1; --k) {
    first[k - 1] = cut[k][j];
    j = cut[k][j];
  }
  return first;
}

std::vector<PipeOp> PipeSchedule(const std::string& kind, int stage, int stages, int micros) {
  std::vector<PipeOp> ops;
  if (kind == "gpipe") {
    for (int i = 0; i < micros; ++i) ops.push_back({true, i});
    for (int i = micros; i-- > 0;) ops.push_back({false, i});
    return ops;
  }
  const int warm = std::min(stages - stage - 1, micros);
  for (int i = 0; i < warm; ++i) ops.push_back({true, i});
  for (int i = 0; i < micros - warm; ++i) {
    ops.push_back({true, warm + i});
    ops.push_back({false, i});
  }
  for (int i = micros - warm; i < micros; ++i) ops.push_back({false, i});
  return ops;
}

std::vector<int> MicroBatches(int images, int micros) {
  std::vector<int> sizes;
  for (int i = 0; i < micros; ++i) {
    const int n = images / micros + (i < images % micros ? 1 : 0);
    if (n > 0) sizes.push_back(n);
  }
  return sizes;
}

}  // namespace hoop::train
