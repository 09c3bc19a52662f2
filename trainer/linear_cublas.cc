#include "trainer/linear_cublas.h"

#include "trainer/linear.h"

namespace hoop::train {

namespace {
const float kOne = 1.0f, kZero = 0.0f;
}  // namespace

CublasLinear::CublasLinear(std::string name, int in, int out, std::mt19937& rng, std::shared_ptr<CudnnContext> ctx)
    : Layer(name), in_(in), out_(out), ctx_(std::move(ctx)) {
  Linear host(std::move(name), in, out, rng);  // the same initial values, drawn the same way
  auto hp = host.Params();
  PlaceParam(*hp[0], ctx_->device(), weight_);
  PlaceParam(*hp[1], ctx_->device(), bias_);
  b_.Set({1, out_, 1, 1});
}

Shape CublasLinear::OutShape(const Shape& in) const {
  if (static_cast<int>(in.per_item()) != in_) return {0, 0, 0, 0};
  return {in.n, out_};
}

void CublasLinear::Forward(const Tensor& in, Tensor& out, Mode, ThreadPool&) {
  const int n = in.shape.n;
  out.ResizeLike(in, OutShape(in.shape));
  CheckBlas(cublasSgemm(ctx_->blas(), CUBLAS_OP_T, CUBLAS_OP_N, out_, n, in_, &kOne, weight_.value.ptr(), in_, in.ptr(),
                        in_, &kZero, out.ptr(), out_),
            "cublasSgemm (forward)");
  y_.Set({n, out_, 1, 1});
  CheckDnn(cudnnAddTensor(ctx_->dnn(), &kOne, b_, bias_.value.ptr(), &kOne, y_, out.ptr()), "cudnnAddTensor (bias)");
}

void CublasLinear::Backward(const Tensor& in, const Tensor&, const Tensor& dout, Tensor* din, ThreadPool&) {
  const int n = in.shape.n;
  CheckBlas(cublasSgemm(ctx_->blas(), CUBLAS_OP_N, CUBLAS_OP_T, in_, out_, n, &kOne, in.ptr(), in_, dout.ptr(), out_,
                        &kZero, weight_.grad.ptr(), in_),
            "cublasSgemm (weight gradient)");
  y_.Set({n, out_, 1, 1});
  CheckDnn(cudnnConvolutionBackwardBias(ctx_->dnn(), &kOne, y_, dout.ptr(), &kZero, b_, bias_.grad.ptr()),
           "cudnnConvolutionBackwardBias (bias gradient)");
  if (!din) return;
  din->ResizeLike(in, in.shape);
  CheckBlas(cublasSgemm(ctx_->blas(), CUBLAS_OP_N, CUBLAS_OP_N, in_, n, out_, &kOne, weight_.value.ptr(), in_,
                        dout.ptr(), out_, &kZero, din->ptr(), in_),
            "cublasSgemm (input gradient)");
}

}  // namespace hoop::train
