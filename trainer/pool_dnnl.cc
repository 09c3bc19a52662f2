#include "trainer/pool_dnnl.h"

#include "trainer/dnnl_memory.h"

namespace hoop::train {

using dnnl::memory;

struct DnnlMaxPool::Primitives : PrimitivesBase {
  memory::desc src, dst;
  dnnl::pooling_forward fwd;
  memory workspace;  // the winners, training only
  dnnl::pooling_backward bwd;
};

DnnlMaxPool::DnnlMaxPool(std::string name, int k) : MaxPool(std::move(name), k), k_(k) {}
DnnlMaxPool::~DnnlMaxPool() = default;

DnnlMaxPool::Primitives& DnnlMaxPool::For(const Shape& in, int block, Mode mode) {
  return Cached(cache_, PrimitiveKey{in, block, mode}, [&](Primitives& p) {
    const Shape out = OutShape(in);
    p.src = DescOf(in, block);
    p.dst = DescOf(out, block);
    const memory::dims k{k_, k_}, zero{0, 0};
    // No padding: rows and columns past the last whole window are left out (oneDNN's output size
    // is (in - k) / k + 1, rounded down, the same as MaxPool's in / k).
    const memory::dims pad_r = zero;
    const bool train = mode == Mode::kTrain;
    const auto prop = train ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
    const auto algo = dnnl::algorithm::pooling_max;
    dnnl::pooling_forward::primitive_desc fwd_pd(
        dnnl::pooling_forward::desc(prop, algo, p.src, p.dst, k, k, zero, pad_r), p.eng);
    p.fwd = dnnl::pooling_forward(fwd_pd);
    if (train) {
      p.workspace = memory(fwd_pd.workspace_desc(), p.eng);
      dnnl::pooling_backward::primitive_desc bwd_pd(dnnl::pooling_backward::desc(algo, p.src, p.dst, k, k, zero, pad_r),
                                                    p.eng, fwd_pd);
      p.bwd = dnnl::pooling_backward(bwd_pd);
    }
  });
}

void DnnlMaxPool::Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool&) {
  out.Resize(OutShape(in.shape));
  out.block = in.block;
  if (out.size() == 0) return;
  Primitives& p = For(in.shape, in.block, mode);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(p.src, p.eng, const_cast<float*>(in.ptr()))},
                                       {DNNL_ARG_DST, memory(p.dst, p.eng, out.ptr())}};
  if (p.workspace) args.emplace(DNNL_ARG_WORKSPACE, p.workspace);
  p.fwd.execute(p.strm, args);
  p.strm.wait();
}

void DnnlMaxPool::Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool&) {
  if (!din) return;
  din->Resize(in.shape);
  din->block = in.block;
  if (out.size() == 0) {
    din->Zero();
    return;
  }
  Primitives& p = For(in.shape, in.block, Mode::kTrain);
  p.bwd.execute(p.strm, {{DNNL_ARG_DIFF_DST, memory(p.dst, p.eng, const_cast<float*>(dout.ptr()))},
                         {DNNL_ARG_DIFF_SRC, memory(p.src, p.eng, din->ptr())},
                         {DNNL_ARG_WORKSPACE, p.workspace}});
  p.strm.wait();
}

struct DnnlGlobalAvgPool::Primitives : PrimitivesBase {
  memory::desc src, dst;
  dnnl::pooling_forward fwd;
  dnnl::pooling_backward bwd;
};

DnnlGlobalAvgPool::DnnlGlobalAvgPool(std::string name) : GlobalAvgPool(std::move(name)) {}
DnnlGlobalAvgPool::~DnnlGlobalAvgPool() = default;

DnnlGlobalAvgPool::Primitives& DnnlGlobalAvgPool::For(const Shape& in, int block) {
  return Cached(cache_, PrimitiveKey{in, block}, [&](Primitives& p) {
    p.src = DescOf(in, block);
    p.dst = DescOf(OutShape(in), block);
    const memory::dims window{in.h, in.w}, zero{0, 0};
    const auto algo = dnnl::algorithm::pooling_avg_exclude_padding;
    dnnl::pooling_forward::primitive_desc fwd_pd(
        dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, algo, p.src, p.dst, window, window, zero, zero),
        p.eng);
    p.fwd = dnnl::pooling_forward(fwd_pd);
    dnnl::pooling_backward::primitive_desc bwd_pd(
        dnnl::pooling_backward::desc(algo, p.src, p.dst, window, window, zero, zero), p.eng, fwd_pd);
    p.bwd = dnnl::pooling_backward(bwd_pd);
  });
}

void DnnlGlobalAvgPool::Forward(const Tensor& in, Tensor& out, Mode, ThreadPool&) {
  out.Resize(OutShape(in.shape));
  out.block = in.block;
  if (out.size() == 0) return;
  Primitives& p = For(in.shape, in.block);
  p.fwd.execute(p.strm, {{DNNL_ARG_SRC, memory(p.src, p.eng, const_cast<float*>(in.ptr()))},
                         {DNNL_ARG_DST, memory(p.dst, p.eng, out.ptr())}});
  p.strm.wait();
}

void DnnlGlobalAvgPool::Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool&) {
  if (!din) return;
  din->Resize(in.shape);
  din->block = in.block;
  if (out.size() == 0) return;
  Primitives& p = For(in.shape, in.block);
  p.bwd.execute(p.strm, {{DNNL_ARG_DIFF_DST, memory(p.dst, p.eng, const_cast<float*>(dout.ptr()))},
                         {DNNL_ARG_DIFF_SRC, memory(p.src, p.eng, din->ptr())}});
  p.strm.wait();
}

}  // namespace hoop::train
