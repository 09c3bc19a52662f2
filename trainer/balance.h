// How a global batch is split over ranks of unequal speed (issue 23's hybrid data parallelism,
// after the reference study: a GPU rank beside CPU ranks). Each rank's share of every global
// batch is proportional to its measured speed, so all finish a step together and none waits on
// a slow one; the loss gradient is already scaled by 1 / (the step's images over all ranks) and
// summed (loss.h, data_parallel.h), so the mean stays exact whatever the split. Pure arithmetic:
// the trainer measures the speeds and agrees on them (trainer.cc).
#pragma once
#include <string>
#include <vector>

#include "common/status.h"

namespace hoop::train {

// `total` images split in proportion to `speeds` (images/s per rank), rounded by largest
// remainder (ties to the lower rank), every rank at least 1 while total >= ranks (taken from the
// largest share). Speeds that
// are not all positive and finite give an equal split.
std::vector<int> SharesBySpeed(const std::vector<double>& speeds, int total);

// An equal split: `per_rank` each.
std::vector<int> EqualShares(int ranks, int per_rank);

// --shares "40,24": one count per rank, each >= 0, at least one image in all.
StatusOr<std::vector<int>> ParseShares(const std::string& text);

// "40/24" for logs.
std::string FormatShares(const std::vector<int>& shares);

}  // namespace hoop::train
