// The plan of a pipeline (issue 24, item 5), pure logic: which layers each stage holds, and the
// order in which a stage runs its micro-batches' forward and backward passes.
//
// Split: contiguous groups of layers, one per stage, that minimise the slowest stage's measured
// time (forward plus backward of one micro-batch per layer): the pipeline runs at the pace of
// its slowest stage. Exact, by dynamic programming over (stages, layers): models have tens of
// layers.
//
// Schedules, for stage s of S with M micro-batches (Huang et al. 2019; Narayanan et al. 2019):
//   gpipe: every forward, then every backward, last micro-batch first (its activations are the
//          ones the stage still holds);
//   1f1b:  S - s - 1 forwards to fill the pipeline, then one forward and one backward in turn,
//          then the backwards left: at most S - s micro-batches are in flight on a stage.
// Both end with every micro-batch's backward done, so the gradients accumulated are the same.
#pragma once
#include <string>
#include <vector>

namespace hoop::train {

// first[s]: the index of stage s's first layer (first[0] = 0); stage s has layers
// [first[s], first[s + 1]), the last up to times.size(). Needs 1 <= stages <= times.size().
std::vector<int> SplitLayers(const std::vector<double>& times, int stages);

struct PipeOp {
  bool forward;
  int micro;  // the micro-batch
  bool operator==(const PipeOp&) const = default;
};
std::vector<PipeOp> PipeSchedule(const std::string& kind, int stage, int stages, int micros);

// Sizes of the micro-batches of `images` (as even as can be, the larger first); none empty, so
// fewer than `micros` when there are fewer images.
std::vector<int> MicroBatches(int images, int micros);

}  // namespace hoop::train
