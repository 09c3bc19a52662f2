#include "trainer/conv2d_dnnl.h"

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

namespace hoop::train {

using dnnl::memory;
using Tag = memory::format_tag;

namespace {

// A primitive's view of one tensor: the layout the primitive chose (format "any" lets it pick
// the blocked layouts its JIT kernels want) and, where that is not the tensor's own plain layout,
// a buffer of its own that reorders fill from, or empty back into, the tensor.
struct Slot {
  memory::desc want;
  memory own;  // empty when `want` is the plain layout
  void Make(const memory::desc& chosen, const memory::desc& plain, const dnnl::engine& eng) {
    want = chosen;
    if (chosen != plain) own = memory(chosen, eng);
  }
  // The memory the primitive reads: the tensor itself, or `own` filled from it.
  memory In(const memory::desc& plain, const float* data, const dnnl::engine& eng, dnnl::stream& s) {
    memory user(plain, eng, const_cast<float*>(data));
    if (!own) return user;
    dnnl::reorder(user, own).execute(s, user, own);
    return own;
  }
  // The memory the primitive writes; Out() then moves it into the tensor where it is not the tensor.
  memory Target(const memory::desc& plain, float* data, const dnnl::engine& eng) {
    return own ? own : memory(plain, eng, data);
  }
  void Out(const memory::desc& plain, float* data, const dnnl::engine& eng, dnnl::stream& s) {
    if (!own) return;
    memory user(plain, eng, data);
    dnnl::reorder(own, user).execute(s, own, user);
  }
};

}  // namespace

struct DnnlConv2d::Primitives {
  Shape in;
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  memory::desc src, wei, bia, dst;  // plain layouts: the tensors' own
  dnnl::convolution_forward fwd;
  Slot f_src, f_wei, f_dst;
  dnnl::convolution_backward_data bwd_data;
  Slot d_dst, d_wei, d_src;
  dnnl::convolution_backward_weights bwd_weights;
  Slot w_src, w_dst, w_wei;
};

DnnlConv2d::DnnlConv2d(std::string name, ConvSpec spec, std::mt19937& rng) : Conv2d(std::move(name), spec, rng) {}
DnnlConv2d::~DnnlConv2d() = default;

DnnlConv2d::Primitives& DnnlConv2d::For(const Shape& in) {
  if (p_ && p_->in == in) return *p_;
  auto p = std::make_unique<Primitives>();
  p->in = in;
  const Shape out = OutShape(in);
  const auto f32 = memory::data_type::f32;
  const memory::dims src_d{in.n, in.c, in.h, in.w}, wei_d{s_.out, s_.in, s_.kernel, s_.kernel},
      dst_d{out.n, out.c, out.h, out.w};
  p->src = memory::desc(src_d, f32, Tag::nchw);
  p->wei = memory::desc(wei_d, f32, Tag::oihw);
  p->bia = memory::desc({s_.out}, f32, Tag::x);
  p->dst = memory::desc(dst_d, f32, Tag::nchw);
  const memory::desc src_any(src_d, f32, Tag::any), wei_any(wei_d, f32, Tag::any), dst_any(dst_d, f32, Tag::any);
  const memory::dims strides{s_.stride, s_.stride}, pad{s_.pad, s_.pad};
  const auto algo = dnnl::algorithm::convolution_direct;
  const auto train = dnnl::prop_kind::forward_training;
  auto fwd_d = s_.bias ? dnnl::convolution_forward::desc(train, algo, src_any, wei_any, p->bia, dst_any, strides, pad, pad)
                       : dnnl::convolution_forward::desc(train, algo, src_any, wei_any, dst_any, strides, pad, pad);
  dnnl::convolution_forward::primitive_desc fwd_pd(fwd_d, p->eng);
  p->fwd = dnnl::convolution_forward(fwd_pd);
  p->f_src.Make(fwd_pd.src_desc(), p->src, p->eng);
  p->f_wei.Make(fwd_pd.weights_desc(), p->wei, p->eng);
  p->f_dst.Make(fwd_pd.dst_desc(), p->dst, p->eng);

  dnnl::convolution_backward_data::primitive_desc bd_pd(
      dnnl::convolution_backward_data::desc(algo, src_any, wei_any, dst_any, strides, pad, pad), p->eng, fwd_pd);
  p->bwd_data = dnnl::convolution_backward_data(bd_pd);
  p->d_dst.Make(bd_pd.diff_dst_desc(), p->dst, p->eng);
  p->d_wei.Make(bd_pd.weights_desc(), p->wei, p->eng);
  p->d_src.Make(bd_pd.diff_src_desc(), p->src, p->eng);

  auto bw_d = s_.bias ? dnnl::convolution_backward_weights::desc(algo, src_any, wei_any, p->bia, dst_any, strides, pad, pad)
                      : dnnl::convolution_backward_weights::desc(algo, src_any, wei_any, dst_any, strides, pad, pad);
  dnnl::convolution_backward_weights::primitive_desc bw_pd(bw_d, p->eng, fwd_pd);
  p->bwd_weights = dnnl::convolution_backward_weights(bw_pd);
  p->w_src.Make(bw_pd.src_desc(), p->src, p->eng);
  p->w_dst.Make(bw_pd.diff_dst_desc(), p->dst, p->eng);
  p->w_wei.Make(bw_pd.diff_weights_desc(), p->wei, p->eng);
  p_ = std::move(p);
  return *p_;
}

void DnnlConv2d::Forward(const Tensor& in, Tensor& out, Mode, ThreadPool&) {
  out.Resize(OutShape(in.shape));
  if (in.shape.n == 0) return;
  Primitives& p = For(in.shape);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, p.f_src.In(p.src, in.ptr(), p.eng, p.strm)},
                                       {DNNL_ARG_WEIGHTS, p.f_wei.In(p.wei, weight_.value.ptr(), p.eng, p.strm)},
                                       {DNNL_ARG_DST, p.f_dst.Target(p.dst, out.ptr(), p.eng)}};
  if (s_.bias) args.emplace(DNNL_ARG_BIAS, memory(p.bia, p.eng, bias_.value.ptr()));
  p.fwd.execute(p.strm, args);
  p.f_dst.Out(p.dst, out.ptr(), p.eng, p.strm);
  p.strm.wait();
}

void DnnlConv2d::Backward(const Tensor& in, const Tensor&, const Tensor& dout, Tensor* din, ThreadPool&) {
  if (din) din->Resize(in.shape);
  weight_.grad.Zero();
  if (s_.bias) bias_.grad.Zero();
  if (in.shape.n == 0) return;
  Primitives& p = For(in.shape);
  std::unordered_map<int, memory> w{{DNNL_ARG_SRC, p.w_src.In(p.src, in.ptr(), p.eng, p.strm)},
                                    {DNNL_ARG_DIFF_DST, p.w_dst.In(p.dst, dout.ptr(), p.eng, p.strm)},
                                    {DNNL_ARG_DIFF_WEIGHTS, p.w_wei.Target(p.wei, weight_.grad.ptr(), p.eng)}};
  if (s_.bias) w.emplace(DNNL_ARG_DIFF_BIAS, memory(p.bia, p.eng, bias_.grad.ptr()));
  p.bwd_weights.execute(p.strm, w);
  p.w_wei.Out(p.wei, weight_.grad.ptr(), p.eng, p.strm);
  if (din) {
    p.bwd_data.execute(p.strm, {{DNNL_ARG_DIFF_DST, p.d_dst.In(p.dst, dout.ptr(), p.eng, p.strm)},
                                {DNNL_ARG_WEIGHTS, p.d_wei.In(p.wei, weight_.value.ptr(), p.eng, p.strm)},
                                {DNNL_ARG_DIFF_SRC, p.d_src.Target(p.src, din->ptr(), p.eng)}});
    p.d_src.Out(p.src, din->ptr(), p.eng, p.strm);
  }
  p.strm.wait();
}

bool HaveOneDnn() { return true; }

void SetOneDnnThreads(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

}  // namespace hoop::train
