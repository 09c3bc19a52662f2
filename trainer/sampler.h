// The distributed sampler: pure rank math, no I/O.
//
// Every epoch, every rank draws the same permutation of the training set from (seed, epoch).
// Step s takes the next global batch of batch x ranks images from it; rank r takes the r-th
// `batch` of those. The last step is short: ranks take what is left in order, so some may get
// fewer images or none, and the step's image count (which scales the loss gradient, loss.h) is
// what all ranks together took. One rank with batch B*N and N ranks with batch B therefore
// visit the same images in the same global batches, which is what makes their training
// equivalent. Ranks of unequal speed may take unequal shares of each global batch (balance.h):
// the global batches stay the same. The test set is split into N contiguous near-equal shards.
#pragma once
#include <cstdint>
#include <vector>

namespace hoop::train {

struct Slice {
  int64_t begin = 0, end = 0;  // positions in the epoch's permutation
  int64_t step_images = 0;     // images in this step over all ranks
  int count() const { return static_cast<int>(end - begin); }
};

class DistributedSampler {
 public:
  DistributedSampler(int64_t images, int batch, int rank, int ranks, uint64_t seed);
  int64_t steps_per_epoch() const;
  // Each rank's images in every global batch (one per rank, the same on every rank; default:
  // `batch` each). Their sum is the global batch: steps_per_epoch follows it.
  void SetShares(std::vector<int> shares);
  const std::vector<int>& shares() const { return shares_; }
  // The epoch's permutation (the same on every rank).
  const std::vector<int64_t>& Shuffle(int epoch);
  Slice At(int64_t step) const;

 private:
  int64_t images_;
  int rank_;
  uint64_t seed_;
  std::vector<int> shares_;
  int64_t global_ = 0, before_ = 0;  // the shares' sum, and the ranks' before this one
  std::vector<int64_t> perm_;
};

// Rank r's contiguous share [begin, end) of `items` split over `ranks`.
void Shard(int64_t items, int rank, int ranks, int64_t* begin, int64_t* end);

}  // namespace hoop::train
