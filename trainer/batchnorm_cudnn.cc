#include "trainer/batchnorm_cudnn.h"

namespace hoop::train {

namespace {
const float kOne = 1.0f, kZero = 0.0f;
}  // namespace

CudnnBatchNorm::CudnnBatchNorm(std::string name, int channels, std::shared_ptr<CudnnContext> ctx)
    : Layer(name), c_(channels), ctx_(std::move(ctx)) {
  BatchNorm host(std::move(name), channels);  // the same names and starting values
  auto hp = host.Params();
  const int d = ctx_->device();
  PlaceParam(*hp[0], d, gamma_);
  PlaceParam(*hp[1], d, beta_);
  auto hb = host.Buffers();
  running_mean_.Place(d);
  running_mean_.Resize({c_});
  running_mean_.Upload(hb[0].second->ptr(), c_);
  running_var_.Place(d);
  running_var_.Resize({c_});
  running_var_.Upload(hb[1].second->ptr(), c_);
  for (Tensor* t : {&saved_mean_, &saved_invstd_}) {
    t->Place(d);
    t->Resize({c_}, true);
  }
  stats_.Set({1, c_, 1, 1});
}

std::vector<std::pair<std::string, Tensor*>> CudnnBatchNorm::Buffers() {
  return {{name() + ".running_mean", &running_mean_}, {name() + ".running_var", &running_var_}};
}

Shape CudnnBatchNorm::OutShape(const Shape& in) const {
  if (in.c != c_) return {0, 0, 0, 0};
  return in;
}

void CudnnBatchNorm::Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool&) {
  out.ResizeLike(in, in.shape);
  x_.Set(in.shape);
  if (mode == Mode::kTrain) {
    CheckDnn(cudnnBatchNormalizationForwardTraining(ctx_->dnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, x_, in.ptr(),
                                                    x_, out.ptr(), stats_, gamma_.value.ptr(), beta_.value.ptr(),
                                                    BatchNorm::kMomentum, running_mean_.ptr(), running_var_.ptr(),
                                                    BatchNorm::kEps, saved_mean_.ptr(), saved_invstd_.ptr()),
             "cudnnBatchNormalizationForwardTraining");
  } else {
    CheckDnn(cudnnBatchNormalizationForwardInference(ctx_->dnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, x_, in.ptr(),
                                                     x_, out.ptr(), stats_, gamma_.value.ptr(), beta_.value.ptr(),
                                                     running_mean_.ptr(), running_var_.ptr(), BatchNorm::kEps),
             "cudnnBatchNormalizationForwardInference");
  }
}

void CudnnBatchNorm::Backward(const Tensor& in, const Tensor&, const Tensor& dout, Tensor* din, ThreadPool&) {
  x_.Set(in.shape);
  Tensor* dx = din ? din : &scratch_;  // cuDNN always writes the input's gradient
  dx->ResizeLike(in, in.shape);
  CheckDnn(
      cudnnBatchNormalizationBackward(ctx_->dnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, &kOne, &kZero, x_, in.ptr(),
                                      x_, dout.ptr(), x_, dx->ptr(), stats_, gamma_.value.ptr(), gamma_.grad.ptr(),
                                      beta_.grad.ptr(), BatchNorm::kEps, saved_mean_.ptr(), saved_invstd_.ptr()),
      "cudnnBatchNormalizationBackward");
}

}  // namespace hoop::train
