#include "trainer/relu_dnnl.h"

#include "trainer/dnnl_memory.h"

namespace hoop::train {

using dnnl::memory;

struct DnnlRelu::Primitives : PrimitivesBase {
  memory::desc data;
  dnnl::eltwise_forward fwd;
  dnnl::eltwise_backward bwd;
};

DnnlRelu::DnnlRelu(std::string name) : Relu(std::move(name)) {}
DnnlRelu::~DnnlRelu() = default;

DnnlRelu::Primitives& DnnlRelu::For(const Shape& shape, int block) {
  return Cached(cache_, PrimitiveKey{shape, block}, [&](Primitives& p) {
    p.data = DescOf(shape, block);
    const auto algo = dnnl::algorithm::eltwise_relu_use_dst_for_bwd;
    dnnl::eltwise_forward::primitive_desc fwd_pd(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, algo, p.data, 0.0f), p.eng);
    p.fwd = dnnl::eltwise_forward(fwd_pd);
    dnnl::eltwise_backward::primitive_desc bwd_pd(dnnl::eltwise_backward::desc(algo, p.data, p.data, 0.0f), p.eng,
                                                  fwd_pd);
    p.bwd = dnnl::eltwise_backward(bwd_pd);
  });
}

void DnnlRelu::Forward(const Tensor& in, Tensor& out, Mode, ThreadPool&) {
  out.Resize(in.shape);
  out.block = in.block;
  if (in.size() == 0) return;
  Primitives& p = For(in.shape, in.block);
  p.fwd.execute(p.strm, {{DNNL_ARG_SRC, memory(p.data, p.eng, const_cast<float*>(in.ptr()))},
                         {DNNL_ARG_DST, memory(p.data, p.eng, out.ptr())}});
  p.strm.wait();
}

void DnnlRelu::Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool&) {
  if (!din) return;
  din->Resize(in.shape);
  din->block = in.block;
  if (in.size() == 0) return;
  Primitives& p = For(in.shape, in.block);
  p.bwd.execute(p.strm, {{DNNL_ARG_DST, memory(p.data, p.eng, const_cast<float*>(out.ptr()))},
                         {DNNL_ARG_DIFF_DST, memory(p.data, p.eng, const_cast<float*>(dout.ptr()))},
                         {DNNL_ARG_DIFF_SRC, memory(p.data, p.eng, din->ptr())}});
  p.strm.wait();
}

}  // namespace hoop::train
