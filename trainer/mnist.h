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
  std::string name = "fashion-mnist";
  int count = 0, channels = 1, rows = 28, cols = 28;
  std::vector<uint8_t> pixels;  // count x channels x rows x cols
  std::vector<uint8_t> labels;  // count, each < 10
  // Per channel, of the training set's pixels scaled to [0, 1]: Gather normalises with these.
  float mean[3] = {0.2860f, 0, 0}, stddev[3] = {0.3530f, 1, 1};
};

// split: "train" or "t10k". Looks for DIR/SPLIT-images-idx3-ubyte(.gz) and ...-labels-idx1-ubyte(.gz).
StatusOr<Dataset> LoadFashionMnist(const std::string& dir, const std::string& split);

// Copies the images at `indices` into `out` (N x channels x (rows + 2 pad) x (cols + 2 pad)),
// scaled to [0, 1] and normalised with the data set's mean and standard deviation per channel,
// each centred in a border of `pad` black pixels (Fashion-MNIST's 28x28 padded to 32x32 for the
// ResNet-18/34 made for 32x32 images), and their labels into `labels`.
void Gather(const Dataset& d, const int64_t* indices, int n, Tensor& out, std::vector<uint8_t>& labels, int pad = 0);

// The data set in `dir`: CIFAR-10's binary version (cifar.h) when dir holds its files, else
// Fashion-MNIST's IDX files. split: "train" or "test".
StatusOr<Dataset> LoadDataset(const std::string& dir, const std::string& split);

}  // namespace hoop::train
