#include "trainer/sampler.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace hoop::train {

DistributedSampler::DistributedSampler(int64_t images, int batch, int rank, int ranks, uint64_t seed)
    : images_(images), rank_(rank), seed_(seed) {
  SetShares(std::vector<int>(ranks, batch));
}

void DistributedSampler::SetShares(std::vector<int> shares) {
  shares_ = std::move(shares);
  global_ = std::accumulate(shares_.begin(), shares_.end(), int64_t{0});
  before_ = std::accumulate(shares_.begin(), shares_.begin() + rank_, int64_t{0});
}

int64_t DistributedSampler::steps_per_epoch() const { return (images_ + global_ - 1) / global_; }

const std::vector<int64_t>& DistributedSampler::Shuffle(int epoch) {
  perm_.resize(images_);
  std::iota(perm_.begin(), perm_.end(), 0);
  // Fisher-Yates with a fixed generator, so every standard library draws the same order.
  std::mt19937_64 rng(seed_ * 1000003u + static_cast<uint64_t>(epoch));
  for (int64_t i = images_ - 1; i > 0; --i) {
    int64_t j = static_cast<int64_t>(rng() % static_cast<uint64_t>(i + 1));
    std::swap(perm_[i], perm_[j]);
  }
  return perm_;
}

Slice DistributedSampler::At(int64_t step) const {
  const int64_t start = step * global_;
  Slice s;
  s.step_images = std::min(global_, images_ - start);
  s.begin = std::min(images_, start + before_);
  s.end = std::min(images_, s.begin + shares_[rank_]);
  return s;
}

void Shard(int64_t items, int rank, int ranks, int64_t* begin, int64_t* end) {
  *begin = items * rank / ranks;
  *end = items * (rank + 1) / ranks;
}

}  // namespace hoop::train
