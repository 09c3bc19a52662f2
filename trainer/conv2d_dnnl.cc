#include "trainer/conv2d_dnnl.h"

#include "trainer/dnnl_memory.h"

namespace hoop::train {

using dnnl::memory;

struct DnnlConv2d::Primitives : PrimitivesBase {
  int out_block = 0;      // the output's layout, the primitive's choice
  memory::desc wei, bia;  // the parameters' own layouts
  dnnl::convolution_forward fwd;
  Slot f_src, f_wei, f_dst;
  dnnl::convolution_backward_data bwd_data;
  Slot d_dst, d_wei, d_src;
  dnnl::convolution_backward_weights bwd_weights;
  Slot w_src, w_dst, w_wei;
};

DnnlConv2d::DnnlConv2d(std::string name, ConvSpec spec, std::mt19937& rng, bool bf16)
    : Conv2d(std::move(name), spec, rng), bf16_(bf16) {}
DnnlConv2d::~DnnlConv2d() = default;

DnnlConv2d::Primitives& DnnlConv2d::For(const Shape& in, int block) {
  return Cached(cache_, PrimitiveKey{in, block}, [&](Primitives& p) {
    const Shape out = OutShape(in);
    const auto f32 = memory::data_type::f32;
    const auto in_type = bf16_ ? memory::data_type::bf16 : f32;  // the products' operands
    const auto any = memory::format_tag::any;
    const memory::dims src_d{in.n, in.c, in.h, in.w}, wei_d{s_.out, s_.in, s_.kernel, s_.kernel},
        dst_d{out.n, out.c, out.h, out.w};
    p.wei = memory::desc(wei_d, f32, memory::format_tag::oihw);
    p.bia = memory::desc({s_.out}, f32, memory::format_tag::x);
    // Operands in bf16 where asked; what the primitives write (output, gradients) stays f32.
    const memory::desc src_any(src_d, in_type, any), wei_any(wei_d, in_type, any), dst_any(dst_d, f32, any),
        ddst_any(dst_d, in_type, any), dsrc_any(src_d, f32, any), dwei_any(wei_d, f32, any);
    const memory::dims strides{s_.stride, s_.stride}, pad{s_.pad, s_.pad};
    const auto algo = dnnl::algorithm::convolution_direct;
    const auto train = dnnl::prop_kind::forward_training;
    auto fwd_d = s_.bias
                     ? dnnl::convolution_forward::desc(train, algo, src_any, wei_any, p.bia, dst_any, strides, pad, pad)
                     : dnnl::convolution_forward::desc(train, algo, src_any, wei_any, dst_any, strides, pad, pad);
    dnnl::convolution_forward::primitive_desc fwd_pd(fwd_d, p.eng);
    p.fwd = dnnl::convolution_forward(fwd_pd);
    // The output takes the primitive's layout when a Tensor can carry it.
    const int chosen = BlockOf(fwd_pd.dst_desc(), out);
    p.out_block = chosen < 0 ? 0 : chosen;
    const memory::desc src = DescOf(in, block), dst = DescOf(out, p.out_block);
    p.f_src.Make(fwd_pd.src_desc(), src, p.eng);
    p.f_wei.Make(fwd_pd.weights_desc(), p.wei, p.eng);
    p.f_dst.Make(fwd_pd.dst_desc(), dst, p.eng);

    dnnl::convolution_backward_data::primitive_desc bd_pd(
        dnnl::convolution_backward_data::desc(algo, dsrc_any, wei_any, ddst_any, strides, pad, pad), p.eng, fwd_pd);
    p.bwd_data = dnnl::convolution_backward_data(bd_pd);
    p.d_dst.Make(bd_pd.diff_dst_desc(), dst, p.eng);
    p.d_wei.Make(bd_pd.weights_desc(), p.wei, p.eng);
    p.d_src.Make(bd_pd.diff_src_desc(), src, p.eng);

    auto bw_d =
        s_.bias ? dnnl::convolution_backward_weights::desc(algo, src_any, dwei_any, p.bia, ddst_any, strides, pad, pad)
                : dnnl::convolution_backward_weights::desc(algo, src_any, dwei_any, ddst_any, strides, pad, pad);
    dnnl::convolution_backward_weights::primitive_desc bw_pd(bw_d, p.eng, fwd_pd);
    p.bwd_weights = dnnl::convolution_backward_weights(bw_pd);
    p.w_src.Make(bw_pd.src_desc(), src, p.eng);
    p.w_dst.Make(bw_pd.diff_dst_desc(), dst, p.eng);
    p.w_wei.Make(bw_pd.diff_weights_desc(), p.wei, p.eng);
  });
}

void DnnlConv2d::Forward(const Tensor& in, Tensor& out, Mode, ThreadPool&) {
  out.Resize(OutShape(in.shape));
  if (in.shape.n == 0) return;
  Primitives& p = For(in.shape, in.block);
  out.block = p.out_block;
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, p.f_src.In(in.ptr(), p.eng, p.strm)},
                                       {DNNL_ARG_WEIGHTS, p.f_wei.In(weight_.value.ptr(), p.eng, p.strm)},
                                       {DNNL_ARG_DST, p.f_dst.Target(out.ptr(), p.eng)}};
  if (s_.bias) args.emplace(DNNL_ARG_BIAS, memory(p.bia, p.eng, bias_.value.ptr()));
  p.fwd.execute(p.strm, args);
  p.f_dst.Out(out.ptr(), p.eng, p.strm);
  p.strm.wait();
}

void DnnlConv2d::Backward(const Tensor& in, const Tensor&, const Tensor& dout, Tensor* din, ThreadPool&) {
  if (din) {
    din->Resize(in.shape);
    din->block = in.block;
  }
  weight_.grad.Zero();
  if (s_.bias) bias_.grad.Zero();
  if (in.shape.n == 0) return;
  Primitives& p = For(in.shape, in.block);
  // The output's gradient, in the layout (and type: bf16) both backward passes read: converted once
  // where they want the same one.
  const memory ddst = p.w_dst.In(dout.ptr(), p.eng, p.strm);
  std::unordered_map<int, memory> w{{DNNL_ARG_SRC, p.w_src.In(in.ptr(), p.eng, p.strm)},
                                    {DNNL_ARG_DIFF_DST, ddst},
                                    {DNNL_ARG_DIFF_WEIGHTS, p.w_wei.Target(weight_.grad.ptr(), p.eng)}};
  if (s_.bias) w.emplace(DNNL_ARG_DIFF_BIAS, memory(p.bia, p.eng, bias_.grad.ptr()));
  p.bwd_weights.execute(p.strm, w);
  p.w_wei.Out(weight_.grad.ptr(), p.eng, p.strm);
  if (din) {
    const memory ddst_data = p.d_dst.want == p.w_dst.want ? ddst : p.d_dst.In(dout.ptr(), p.eng, p.strm);
    p.bwd_data.execute(p.strm, {{DNNL_ARG_DIFF_DST, ddst_data},
                                {DNNL_ARG_WEIGHTS, p.d_wei.In(weight_.value.ptr(), p.eng, p.strm)},
                                {DNNL_ARG_DIFF_SRC, p.d_src.Target(din->ptr(), p.eng)}});
    p.d_src.Out(din->ptr(), p.eng, p.strm);
  }
  p.strm.wait();
}

}  // namespace hoop::train
