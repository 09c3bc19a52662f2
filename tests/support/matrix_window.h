// Test matrices too large for one CI run (the failure matrix, the deterministic matrix): a run
// takes one window of a fixed shuffle of the cells, chosen by the quarter-day (UTC) so that runs
// spread over six days cover every cell, or by a variable that repeats it; a second variable runs
// every cell. Sizes drawn per cell vary with the week (Since1970).
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace hoop::test {

inline long Since1970(std::chrono::hours unit) {
  return static_cast<long>(
      std::chrono::duration_cast<std::chrono::hours>(std::chrono::system_clock::now().time_since_epoch()).count() /
      unit.count());
}

// The quarter-day (UTC) since 1970 that the windows turn by: HOOPTEST_QUARTER_DAY where given
// (scripts/test.sh fixes it once per run), else now.
inline long QuarterDay() {
  const char* env = std::getenv("HOOPTEST_QUARTER_DAY");
  return env && *env ? std::atol(env) : Since1970(std::chrono::hours(6));
}

struct MatrixWindow {
  int windows = 24;
  const char* window_env = nullptr;  // repeats a window: HOOPTEST_..._WINDOW=K
  const char* all_env = nullptr;     // =all runs every cell
  const char* what = "matrix";
  unsigned shuffle_seed = 1;

  // This run's cells of `cells`, as indices in the shuffle's order (each paired with its place
  // in the unshuffled list: what per-cell draws hash). Says which window it took, on stderr.
  std::vector<size_t> Pick(size_t cells) const {
    const char* all_text = std::getenv(all_env);
    const bool all = all_text && std::string(all_text) == "all";
    const char* env = std::getenv(window_env);
    const int w = env ? std::atoi(env) % windows : static_cast<int>(QuarterDay() % windows);
    if (!all)
      std::fprintf(stderr, "hooptest: %s window %d of %d (%s=%d repeats it; %s=all runs every cell)\n", what, w,
                   windows, window_env, w, all_env);
    std::vector<size_t> order(cells);
    for (size_t i = 0; i < cells; ++i) order[i] = i;
    std::mt19937 shuffle(shuffle_seed);
    for (size_t i = cells; i > 1; --i) std::swap(order[i - 1], order[shuffle() % i]);
    std::vector<size_t> picked;
    for (size_t k = 0; k < cells; ++k)
      if (all || static_cast<int>(k % static_cast<size_t>(windows)) == w) picked.push_back(order[k]);
    return picked;
  }
};

}  // namespace hoop::test
