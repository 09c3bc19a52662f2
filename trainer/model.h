// The reference models, for 10 classes:
//  - lenet: LeNet-5's shape (conv5x5-ReLU-maxpool twice, then 120-84-10 fully connected) with
//    16 and 32 channels instead of 6 and 16, which is what reaching 89% on Fashion-MNIST in two
//    epochs takes (measured: docs/PERF.md);
//  - resnet: a small residual net with batch norm: a 3x3 stem of 16 channels, three basic blocks
//    of 16, 32 (stride 2) and 64 (stride 2) channels, global average pooling, 64-10 linear;
//  - resnet18, resnet34: He et al.'s networks in their CIFAR form, for 32x32 inputs of any
//    number of channels (Fashion-MNIST padded to 32x32, or CIFAR-10): 11.2 and 21.3 million
//    parameters.
// Weights are He-initialised from --seed; every rank builds the same model and rank 0's copy
// is broadcast anyway.
#pragma once
#include <memory>
#include <string>

#include "common/status.h"
#include "trainer/chain.h"
#include "trainer/gradient_arena.h"
#include "trainer/layer_factory.h"

namespace hoop::train {

struct Model {
  std::string name;
  Shape input{0, 1, 28, 28};  // what one image must be (n unused)
  int classes = 10;
  Chain net;
  int device = -1;                   // the CUDA device its tensors live on; -1: host memory
  std::shared_ptr<TensorMath> math;  // its back end's arithmetic between layers (tensor_math.h)
  // Its gradients in one array, once the data-parallel run binds it (gradient_arena.h).
  GradientArena grads;
  size_t ParamCount() const;
};

inline constexpr const char* kModelNames = "lenet, resnet, resnet18 or resnet34";

// `layers`: the layers' back end (layer_factory.h); the same parameters either way. `channels`:
// of the input images (lenet and resnet take 1).
StatusOr<std::unique_ptr<Model>> BuildModel(const std::string& name, uint64_t seed, Layers layers = Layers::kNative,
                                            int channels = 1);
// The same, on the layers `make` makes (CudaLayerFactory's, for a model on a GPU).
StatusOr<std::unique_ptr<Model>> BuildModel(const std::string& name, uint64_t seed, const LayerFactory& make,
                                            int channels = 1);

// Why `batch` images per rank of `model` would not fit in this host's memory shared by
// `local_ranks` ranks, or "". The estimate is measured (docs/PERF.md): a fixed part (the data
// sets, the library) plus bytes per image of activations and their gradients; evaluation runs in
// chunks of EvalChunk images, so a smaller batch costs what a chunk does.
std::string BatchTooLarge(const std::string& model, int batch, int local_ranks);
// Images per evaluation forward pass: 500, 100 for resnet18/34 (14.5 and 24.4 MB per image).
int EvalChunk(const std::string& model);

}  // namespace hoop::train
