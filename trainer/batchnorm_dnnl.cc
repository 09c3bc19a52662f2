#include "trainer/batchnorm_dnnl.h"

#include "trainer/dnnl_memory.h"

namespace hoop::train {

using dnnl::memory;
using Flags = dnnl::normalization_flags;

struct DnnlBatchNorm::Primitives : PrimitivesBase {
  memory::desc data, stat;
  dnnl::batch_normalization_forward fwd;
  memory workspace;  // fused ReLU's mask, training only
  dnnl::batch_normalization_backward bwd;
};

DnnlBatchNorm::DnnlBatchNorm(std::string name, int channels, bool relu)
    : BatchNorm(std::move(name), channels), relu_(relu) {}
DnnlBatchNorm::~DnnlBatchNorm() = default;

DnnlBatchNorm::Primitives& DnnlBatchNorm::For(const Shape& in, int block, Mode mode) {
  return Cached(cache_, PrimitiveKey{in, block, mode}, [&](Primitives& p) {
    p.data = DescOf(in, block);
    p.stat = memory::desc({c_}, memory::data_type::f32, memory::format_tag::x);
    Flags flags = Flags::use_scale | Flags::use_shift;
    if (relu_) flags |= Flags::fuse_norm_relu;
    const bool train = mode == Mode::kTrain;
    if (!train) flags |= Flags::use_global_stats;
    const auto prop = train ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
    dnnl::batch_normalization_forward::primitive_desc fwd_pd(
        dnnl::batch_normalization_forward::desc(prop, p.data, kEps, flags), p.eng);
    p.fwd = dnnl::batch_normalization_forward(fwd_pd);
    if (train) {
      if (relu_) p.workspace = memory(fwd_pd.workspace_desc(), p.eng);
      dnnl::batch_normalization_backward::primitive_desc bwd_pd(
          dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, p.data, p.data, kEps, flags), p.eng,
          fwd_pd);
      p.bwd = dnnl::batch_normalization_backward(bwd_pd);
    }
  });
}

void DnnlBatchNorm::Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool&) {
  out.Resize(in.shape);
  out.block = in.block;
  const size_t m = in.shape.size() / c_;
  if (m == 0) return;
  Primitives& p = For(in.shape, in.block, mode);
  const bool train = mode == Mode::kTrain;
  mean_.resize(c_);
  var_.resize(c_);
  float* mean = train ? mean_.data() : running_mean_.ptr();
  float* var = train ? var_.data() : running_var_.ptr();
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(p.data, p.eng, const_cast<float*>(in.ptr()))},
                                       {DNNL_ARG_DST, memory(p.data, p.eng, out.ptr())},
                                       {DNNL_ARG_SCALE, memory(p.stat, p.eng, gamma_.value.ptr())},
                                       {DNNL_ARG_SHIFT, memory(p.stat, p.eng, beta_.value.ptr())},
                                       {DNNL_ARG_MEAN, memory(p.stat, p.eng, mean)},
                                       {DNNL_ARG_VARIANCE, memory(p.stat, p.eng, var)}};
  if (p.workspace) args.emplace(DNNL_ARG_WORKSPACE, p.workspace);
  p.fwd.execute(p.strm, args);
  p.strm.wait();
  if (!train) return;
  // PyTorch's running statistics: the unbiased variance, momentum kMomentum.
  const float unbias = m > 1 ? static_cast<float>(m) / static_cast<float>(m - 1) : 1.0f;
  for (int c = 0; c < c_; ++c) {
    running_mean_.data[c] = (1 - kMomentum) * running_mean_.data[c] + kMomentum * mean_[c];
    running_var_.data[c] = (1 - kMomentum) * running_var_.data[c] + kMomentum * var_[c] * unbias;
  }
}

void DnnlBatchNorm::Backward(const Tensor& in, const Tensor&, const Tensor& dout, Tensor* din, ThreadPool&) {
  Tensor* dx = din ? din : &scratch_;
  dx->Resize(in.shape);
  dx->block = in.block;
  gamma_.grad.Zero();
  beta_.grad.Zero();
  if (in.shape.size() == 0) return;
  // The primitives of the training Forward this follows (its workspace holds the ReLU mask).
  Primitives& p = For(in.shape, in.block, Mode::kTrain);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(p.data, p.eng, const_cast<float*>(in.ptr()))},
                                       {DNNL_ARG_MEAN, memory(p.stat, p.eng, mean_.data())},
                                       {DNNL_ARG_VARIANCE, memory(p.stat, p.eng, var_.data())},
                                       {DNNL_ARG_DIFF_DST, memory(p.data, p.eng, const_cast<float*>(dout.ptr()))},
                                       {DNNL_ARG_SCALE, memory(p.stat, p.eng, gamma_.value.ptr())},
                                       // oneDNN 2.6 refuses backward with use_shift unless given the shift too
                                       {DNNL_ARG_SHIFT, memory(p.stat, p.eng, beta_.value.ptr())},
                                       {DNNL_ARG_DIFF_SRC, memory(p.data, p.eng, dx->ptr())},
                                       {DNNL_ARG_DIFF_SCALE, memory(p.stat, p.eng, gamma_.grad.ptr())},
                                       {DNNL_ARG_DIFF_SHIFT, memory(p.stat, p.eng, beta_.grad.ptr())}};
  if (p.workspace) args.emplace(DNNL_ARG_WORKSPACE, p.workspace);
  p.bwd.execute(p.strm, args);
  p.strm.wait();
}

}  // namespace hoop::train
