// Which implementation each kind of layer gets. The models (model.cc, residual.cc) build
// through a factory instead of naming classes, so one model definition serves every back end
// and gives the same parameters (names, shapes, initial values from the same seed) on each:
//  - native: the hand-written layers (im2col + OpenBLAS convolutions, plain loops);
//  - onednn: convolutions, batch norm (with ReLU fused into it where one follows), ReLU, max
//    and global average pooling on oneDNN primitives, passing oneDNN's blocked layouts between
//    them (tensor.h); linear layers stay on OpenBLAS's GEMM (linear.h);
//  - cuda: every layer on one CUDA device, its tensors in device memory: cuDNN's convolutions,
//    batch norm, pooling and activations, cuBLAS's GEMM for linear layers, and cuDNN's tensor
//    operations and cuBLAS's vector calls for the rest (tensor_math.h). Its parameters start as
//    the hand-written layers' do, copied to the device, so a job may mix back ends across ranks.
#pragma once
#include <memory>
#include <random>
#include <string>

#include "common/status.h"
#include "trainer/chain.h"
#include "trainer/conv2d.h"
#include "trainer/tensor_math.h"

namespace hoop::train {

enum class Layers { kNative, kOneDnn, kCuda };
const char* LayersName(Layers l);

class LayerFactory {
 public:
  virtual ~LayerFactory() = default;
  virtual std::unique_ptr<Layer> Conv(std::string name, ConvSpec spec, std::mt19937& rng) const;
  virtual std::unique_ptr<Layer> MaxPool(std::string name, int k) const;
  virtual std::unique_ptr<Layer> GlobalAvgPool(std::string name) const;
  virtual std::unique_ptr<Layer> Relu(std::string name) const;
  virtual std::unique_ptr<Layer> Linear(std::string name, int in, int out, std::mt19937& rng) const;
  // Adds batch norm over `channels` to `chain`, then, when relu_name is not empty, a ReLU
  // (fused into the batch norm where the back end can).
  virtual void AddBatchNorm(Chain& chain, const std::string& name, int channels, const std::string& relu_name) const;
  // The arithmetic between layers (residual sums, the optimizer) on this back end's memory.
  virtual std::shared_ptr<TensorMath> Math() const { return HostMath(); }
  // The CUDA device the layers' tensors live on, or -1 for host memory.
  virtual int device() const { return -1; }
};

// The factory for `layers`, or null when this build lacks that back end (HaveOneDnn()); null for
// kCuda, which needs a device: CudaLayerFactory.
std::unique_ptr<LayerFactory> MakeLayerFactory(Layers layers);

// oneDNN's factory, or null without oneDNN (layer_factory_dnnl.cc, layer_factory_dnnl_none.cc).
// bf16: its convolutions multiply in bf16 (conv2d_dnnl.h); the other layers are f32 either way.
std::unique_ptr<LayerFactory> OneDnnLayerFactory(bool bf16 = false);
// Why oneDNN's bf16 convolutions cannot run at speed here, or "": a build without oneDNN, or a
// CPU whose instructions (as oneDNN sees them) lack AVX512-BF16 and AMX, where bf16 would be
// emulated, slower than f32.
std::string OneDnnBf16Missing();
// The cuDNN/cuBLAS factory for CUDA device `device` (layer_factory_cuda.cc), or why there is none:
// Unimplemented in a build without CUDA or cuDNN, Unavailable without a usable device.
// tf32: let cuDNN's convolutions use TF32 tensor cores (PyTorch's default for convolutions); its
// GEMMs stay f32 either way (as PyTorch's default for matrix products). benchmark: convolution
// algorithms chosen by measurement, per shape (cudnn_context.h).
StatusOr<std::unique_ptr<LayerFactory>> CudaLayerFactory(int device, bool tf32, bool deterministic = false,
                                                         bool benchmark = false);
// Whether this build has the cuDNN/cuBLAS layers.
bool HaveCudaLayers();
// Whether this build has oneDNN, and the threads its primitives use.
bool HaveOneDnn();
void SetOneDnnThreads(int threads);

}  // namespace hoop::train
