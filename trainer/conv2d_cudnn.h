// 2-D convolution on cuDNN (the CUDA back end, layer_factory.h): forward, backward data and
// backward filter with the algorithms cuDNN's heuristics rank first for each input shape, or
// with --cudnn-benchmark the ones it measures fastest (either kept per shape: training and
// evaluation batches differ), the bias added and its gradient summed by cuDNN too. Parameters
// as Conv2d's (OC x C x K x K, cuDNN's KCRS), starting from its values.
#pragma once
#include <vector>

#include "trainer/conv2d.h"
#include "trainer/cudnn_context.h"

namespace hoop::train {

class CudnnConv2d : public Layer {
 public:
  CudnnConv2d(std::string name, ConvSpec spec, std::mt19937& rng, std::shared_ptr<CudnnContext> ctx);
  ~CudnnConv2d() override;
  Shape OutShape(const Shape& in) const override;
  void Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) override;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool& pool) override;
  std::vector<Param*> Params() override;

 private:
  struct Algos {  // for one input shape
    Shape in;
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t data;
    cudnnConvolutionBwdFilterAlgo_t filter;
    size_t fwd_bytes = 0, data_bytes = 0, filter_bytes = 0;
  };
  const Algos& For(const Shape& in);
  void ChooseAlgos(const Shape& in, const TensorDesc& x, const TensorDesc& y, Algos& a);

  ConvSpec s_;
  std::shared_ptr<CudnnContext> ctx_;
  Param weight_, bias_;
  cudnnFilterDescriptor_t wdesc_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  TensorDesc x_, y_, b_;
  std::vector<Algos> algos_;
};

}  // namespace hoop::train
