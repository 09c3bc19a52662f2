// Fashion-MNIST (or MNIST) from its IDX files, gzip-compressed as Debian's dataset-fashion-mnist
// ships them under /usr/share/datasets/fashion-mnist, read through zlib (plain files work too).
//
// IDX: a big-endian magic (0x00000803 for u8 images of 3 dimensions, 0x00000801 for u8 labels
// of 1), the dimensions as big-endian u32, then the bytes. Every check names the file and what
// is wrong with it: missing, not IDX, wrong dimensions, truncated, images and labels disagreeing,
// a label outside 0..9.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "trainer/tensor.h"

namespace hoop::train {

inline constexpr const char* kDefaultDataDir = "/usr/share/datasets/fashion-mnist";

struct Dataset {
  int count = 0, rows = 28, cols = 28;
  std::vector<uint8_t> pixels;  // count x rows x cols
  std::vector<uint8_t> labels;  // count, each < 10
};

// split: "train" or "t10k". Looks for DIR/SPLIT-images-idx3-ubyte(.gz) and ...-labels-idx1-ubyte(.gz).
StatusOr<Dataset> LoadFashionMnist(const std::string& dir, const std::string& split);

// Copies the images at `indices` into `out` (N x 1 x 28 x 28), scaled to [0, 1] and normalised
// with Fashion-MNIST's mean and standard deviation, and their labels into `labels`.
void Gather(const Dataset& d, const int64_t* indices, int n, Tensor& out, std::vector<uint8_t>& labels);

}  // namespace hoop::train
