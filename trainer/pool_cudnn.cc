#include "trainer/pool_cudnn.h"

namespace hoop::train {

namespace {
const float kOne = 1.0f, kZero = 0.0f;
}  // namespace

CudnnPool::CudnnPool(std::string name, int k, std::shared_ptr<CudnnContext> ctx)
    : Layer(std::move(name)), k_(k), ctx_(std::move(ctx)) {
  CheckDnn(cudnnCreatePoolingDescriptor(&desc_), "cudnnCreatePoolingDescriptor");
}

CudnnPool::~CudnnPool() {
  if (desc_) cudnnDestroyPoolingDescriptor(desc_);
}

Shape CudnnPool::OutShape(const Shape& in) const {
  if (k_ == 0) return {in.n, in.c, 1, 1};
  if (in.h < k_ || in.w < k_) return {0, 0, 0, 0};
  return {in.n, in.c, in.h / k_, in.w / k_};
}

void CudnnPool::SetWindow(const Shape& in) {
  x_.Set(in);
  y_.Set(OutShape(in));
  if (k_ > 0 && window_for_.n != -1) return;  // max pooling's window does not depend on the input
  if (k_ == 0 && window_for_.h == in.h && window_for_.w == in.w) return;
  if (k_ > 0)
    CheckDnn(cudnnSetPooling2dDescriptor(desc_, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, k_, k_, 0, 0, k_, k_),
             "cudnnSetPooling2dDescriptor");
  else
    CheckDnn(cudnnSetPooling2dDescriptor(desc_, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, CUDNN_NOT_PROPAGATE_NAN,
                                         in.h, in.w, 0, 0, in.h, in.w),
             "cudnnSetPooling2dDescriptor");
  window_for_ = in;
}

void CudnnPool::Forward(const Tensor& in, Tensor& out, Mode, ThreadPool&) {
  SetWindow(in.shape);
  out.ResizeLike(in, OutShape(in.shape));
  CheckDnn(cudnnPoolingForward(ctx_->dnn(), desc_, &kOne, x_, in.ptr(), &kZero, y_, out.ptr()), "cudnnPoolingForward");
}

void CudnnPool::Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool&) {
  if (!din) return;
  SetWindow(in.shape);
  din->ResizeLike(in, in.shape);
  CheckDnn(cudnnPoolingBackward(ctx_->dnn(), desc_, &kOne, y_, out.ptr(), y_, dout.ptr(), x_, in.ptr(), &kZero, x_,
                                din->ptr()),
           "cudnnPoolingBackward");
}

CudnnRelu::CudnnRelu(std::string name, std::shared_ptr<CudnnContext> ctx)
    : Layer(std::move(name)), ctx_(std::move(ctx)) {
  CheckDnn(cudnnCreateActivationDescriptor(&act_), "cudnnCreateActivationDescriptor");
  CheckDnn(cudnnSetActivationDescriptor(act_, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0),
           "cudnnSetActivationDescriptor");
}

CudnnRelu::~CudnnRelu() {
  if (act_) cudnnDestroyActivationDescriptor(act_);
}

void CudnnRelu::Forward(const Tensor& in, Tensor& out, Mode, ThreadPool&) {
  out.ResizeLike(in, in.shape);
  x_.Set(in.shape);
  CheckDnn(cudnnActivationForward(ctx_->dnn(), act_, &kOne, x_, in.ptr(), &kZero, x_, out.ptr()),
           "cudnnActivationForward");
}

void CudnnRelu::Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool&) {
  if (!din) return;
  x_.Set(in.shape);
  din->ResizeLike(in, in.shape);
  CheckDnn(cudnnActivationBackward(ctx_->dnn(), act_, &kOne, x_, out.ptr(), x_, dout.ptr(), x_, in.ptr(), &kZero, x_,
                                   din->ptr()),
           "cudnnActivationBackward");
}

}  // namespace hoop::train
