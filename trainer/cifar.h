// CIFAR-10's binary version (the "cifar-10-batches-bin" archive): data_batch_1.bin ...
// data_batch_5.bin (50000 training images) and test_batch.bin (10000), each a run of records of
// one label byte (0..9) and 3072 pixel bytes (32x32 red, then green, then blue). Not on this
// machine's package list: hoop-train reads it when --data names a directory holding it, for the
// ResNet-18/34 runs the reference study makes.
#pragma once
#include <string>

#include "trainer/mnist.h"

namespace hoop::train {

// `dir` or dir/cifar-10-batches-bin, whichever holds CIFAR-10's binary files, or "".
std::string CifarDir(const std::string& dir);

// split: "train" (the five data batches) or "test". Every check names the file and the fault.
StatusOr<Dataset> LoadCifar10(const std::string& dir, const std::string& split);

}  // namespace hoop::train
