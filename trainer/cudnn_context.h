// What the cuDNN/cuBLAS layers (layer_factory_cuda.cc) share on one device: a cuDNN and a cuBLAS
// handle, both on CUDA's legacy default stream (tensor.h says why), a workspace that grows to
// the largest any call asked for, and cuDNN descriptors that free themselves. One per model;
// the layers hold it. Errors throw DeviceError with the call's name and the library's words.
// Only the CUDA build compiles this (it includes cuDNN's and cuBLAS's headers).
#pragma once
#include <cublas_v2.h>
#include <cudnn.h>

#include <memory>
#include <string>

#include "trainer/layer.h"
#include "trainer/tensor.h"

namespace hoop::train {

void CheckDnn(cudnnStatus_t s, const char* what);
void CheckBlas(cublasStatus_t s, const char* what);

class CudnnContext {
 public:
  // Handles on `device` (made current on the calling thread, which must be the one that runs
  // the layers). tf32: convolutions may use TF32 tensor cores. deterministic: convolutions take
  // only the algorithms cuDNN says give the same bits every run (hoop-train --deterministic).
  // benchmark: convolutions take the algorithm cuDNN measures fastest for each input shape, once
  // per shape (PyTorch's cudnn.benchmark), instead of the first its heuristics rank.
  static std::shared_ptr<CudnnContext> Create(int device, bool tf32, bool deterministic = false,
                                              bool benchmark = false);
  ~CudnnContext();
  CudnnContext(const CudnnContext&) = delete;
  CudnnContext& operator=(const CudnnContext&) = delete;

  cudnnHandle_t dnn() const { return dnn_; }
  cublasHandle_t blas() const { return blas_; }
  int device() const { return device_; }
  bool tf32() const { return tf32_; }
  bool deterministic() const { return deterministic_; }
  bool benchmark() const { return benchmark_; }
  // At least `bytes` of device scratch, valid until the next call (the layers run one at a time).
  void* Workspace(size_t bytes);

 private:
  CudnnContext() = default;
  cudnnHandle_t dnn_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  int device_ = -1;
  bool tf32_ = true;
  bool deterministic_ = false;
  bool benchmark_ = false;
  DeviceFloats work_;
};

// A 4-d NCHW f32 tensor descriptor, set from a shape (re-set only when the shape changes).
class TensorDesc {
 public:
  TensorDesc();
  ~TensorDesc();
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  const TensorDesc& Set(const Shape& s);
  cudnnTensorDescriptor_t get() const { return d_; }
  operator cudnnTensorDescriptor_t() const { return d_; }

 private:
  cudnnTensorDescriptor_t d_ = nullptr;
  Shape shape_{-1, -1, -1, -1};
};

// A layer's parameter copied to `device`: the same name and values as `host`'s, its gradient zero.
void PlaceParam(const Param& host, int device, Param& out);

}  // namespace hoop::train
