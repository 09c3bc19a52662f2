#include "trainer/conv2d_cudnn.h"

namespace hoop::train {

namespace {
const float kOne = 1.0f, kZero = 0.0f;

// The first of cuDNN's ranked algorithms that it says can run (a result may carry a failed
// status, and `got` may be 0 for a shape nothing supports), and, where asked, that it says gives
// the same bits every run (some backward algorithms add with atomics, in whatever order).
//
// Measured (cuDNN's Find, ranked by time): only the algorithms of the descriptor's math type
// (Find also tries the default math, which may be TF32 where --tf32 off forbids it), and none
// whose workspace passes kMeasuredWorkspace.
constexpr size_t kMeasuredWorkspace = size_t{1} << 30;

template <typename Perf>
const Perf& Pick(const Perf* ranked, int got, const char* pass, const Shape& in, bool deterministic,
                 const cudnnMathType_t* measured_math = nullptr) {
  for (int i = 0; i < got; ++i)
    if (ranked[i].status == CUDNN_STATUS_SUCCESS && (!deterministic || ranked[i].determinism == CUDNN_DETERMINISTIC) &&
        (!measured_math || (ranked[i].mathType == *measured_math && ranked[i].memory <= kMeasuredWorkspace)))
      return ranked[i];
  throw DeviceError(std::string("cuDNN has no ") + (deterministic ? "deterministic " : "") + "convolution algorithm (" +
                    pass + ") for input " + in.str());
}
}  // namespace

CudnnConv2d::CudnnConv2d(std::string name, ConvSpec spec, std::mt19937& rng, std::shared_ptr<CudnnContext> ctx)
    : Layer(name), s_(spec), ctx_(std::move(ctx)) {
  Conv2d host(std::move(name), spec, rng);  // the same initial values, drawn the same way
  auto hp = host.Params();
  PlaceParam(*hp[0], ctx_->device(), weight_);
  if (s_.bias) PlaceParam(*hp[1], ctx_->device(), bias_);
  CheckDnn(cudnnCreateFilterDescriptor(&wdesc_), "cudnnCreateFilterDescriptor");
  CheckDnn(cudnnSetFilter4dDescriptor(wdesc_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, s_.out, s_.in, s_.kernel, s_.kernel),
           "cudnnSetFilter4dDescriptor");
  CheckDnn(cudnnCreateConvolutionDescriptor(&conv_), "cudnnCreateConvolutionDescriptor");
  CheckDnn(cudnnSetConvolution2dDescriptor(conv_, s_.pad, s_.pad, s_.stride, s_.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                           CUDNN_DATA_FLOAT),
           "cudnnSetConvolution2dDescriptor");
  CheckDnn(cudnnSetConvolutionMathType(conv_, ctx_->tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH),
           "cudnnSetConvolutionMathType");
  b_.Set({1, s_.out, 1, 1});
}

CudnnConv2d::~CudnnConv2d() {
  if (conv_) cudnnDestroyConvolutionDescriptor(conv_);
  if (wdesc_) cudnnDestroyFilterDescriptor(wdesc_);
}

Shape CudnnConv2d::OutShape(const Shape& in) const {
  if (in.c != s_.in) return {0, 0, 0, 0};
  const int oh = (in.h + 2 * s_.pad - s_.kernel) / s_.stride + 1, ow = (in.w + 2 * s_.pad - s_.kernel) / s_.stride + 1;
  if (oh <= 0 || ow <= 0) return {0, 0, 0, 0};
  return {in.n, s_.out, oh, ow};
}

std::vector<Param*> CudnnConv2d::Params() {
  if (s_.bias) return {&weight_, &bias_};
  return {&weight_};
}

// cuDNN's measured choice (--cudnn-benchmark: each algorithm run on scratch memory cuDNN
// allocates, once per shape) or its heuristics' ranking.
void CudnnConv2d::ChooseAlgos(const Shape& in, const TensorDesc& x, const TensorDesc& y, Algos& a) {
  cudnnHandle_t h = ctx_->dnn();
  const bool det = ctx_->deterministic(), measure = ctx_->benchmark();
  cudnnMathType_t math;
  CheckDnn(cudnnGetConvolutionMathType(conv_, &math), "cudnnGetConvolutionMathType");
  const cudnnMathType_t* only = measure ? &math : nullptr;
  int got = 0;
  cudnnConvolutionFwdAlgoPerf_t fp[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  cudnnConvolutionBwdDataAlgoPerf_t dp[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  cudnnConvolutionBwdFilterAlgoPerf_t wp[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  const int nf = CUDNN_CONVOLUTION_FWD_ALGO_COUNT, nd = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
            nw = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  if (measure)
    CheckDnn(cudnnFindConvolutionForwardAlgorithm(h, x, wdesc_, conv_, y, nf, &got, fp),
             "cudnnFindConvolutionForwardAlgorithm");
  else
    CheckDnn(cudnnGetConvolutionForwardAlgorithm_v7(h, x, wdesc_, conv_, y, nf, &got, fp),
             "cudnnGetConvolutionForwardAlgorithm_v7");
  a.fwd = Pick(fp, got, "forward", in, det, only).algo;
  if (measure)
    CheckDnn(cudnnFindConvolutionBackwardDataAlgorithm(h, wdesc_, y, conv_, x, nd, &got, dp),
             "cudnnFindConvolutionBackwardDataAlgorithm");
  else
    CheckDnn(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, wdesc_, y, conv_, x, nd, &got, dp),
             "cudnnGetConvolutionBackwardDataAlgorithm_v7");
  a.data = Pick(dp, got, "backward data", in, det, only).algo;
  if (measure)
    CheckDnn(cudnnFindConvolutionBackwardFilterAlgorithm(h, x, y, conv_, wdesc_, nw, &got, wp),
             "cudnnFindConvolutionBackwardFilterAlgorithm");
  else
    CheckDnn(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x, y, conv_, wdesc_, nw, &got, wp),
             "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
  a.filter = Pick(wp, got, "backward filter", in, det, only).algo;
}

const CudnnConv2d::Algos& CudnnConv2d::For(const Shape& in) {
  for (const Algos& a : algos_)
    if (a.in == in) return a;
  TensorDesc x, y;
  x.Set(in);
  y.Set(OutShape(in));
  cudnnHandle_t h = ctx_->dnn();
  Algos a;
  a.in = in;
  ChooseAlgos(in, x, y, a);
  CheckDnn(cudnnGetConvolutionForwardWorkspaceSize(h, x, wdesc_, conv_, y, a.fwd, &a.fwd_bytes),
           "forward workspace size");
  CheckDnn(cudnnGetConvolutionBackwardDataWorkspaceSize(h, wdesc_, y, conv_, x, a.data, &a.data_bytes),
           "backward data workspace size");
  CheckDnn(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, x, y, conv_, wdesc_, a.filter, &a.filter_bytes),
           "backward filter workspace size");
  if (algos_.size() >= 4) algos_.erase(algos_.begin());  // training, evaluation and a last short batch of each
  algos_.push_back(a);
  return algos_.back();
}

void CudnnConv2d::Forward(const Tensor& in, Tensor& out, Mode, ThreadPool&) {
  const Algos& a = For(in.shape);
  out.ResizeLike(in, OutShape(in.shape));
  x_.Set(in.shape);
  y_.Set(out.shape);
  CheckDnn(cudnnConvolutionForward(ctx_->dnn(), &kOne, x_, in.ptr(), wdesc_, weight_.value.ptr(), conv_, a.fwd,
                                   ctx_->Workspace(a.fwd_bytes), a.fwd_bytes, &kZero, y_, out.ptr()),
           "cudnnConvolutionForward");
  if (s_.bias)
    CheckDnn(cudnnAddTensor(ctx_->dnn(), &kOne, b_, bias_.value.ptr(), &kOne, y_, out.ptr()), "cudnnAddTensor (bias)");
}

void CudnnConv2d::Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din, ThreadPool&) {
  const Algos& a = For(in.shape);
  x_.Set(in.shape);
  y_.Set(out.shape);
  cudnnHandle_t h = ctx_->dnn();
  if (s_.bias)
    CheckDnn(cudnnConvolutionBackwardBias(h, &kOne, y_, dout.ptr(), &kZero, b_, bias_.grad.ptr()),
             "cudnnConvolutionBackwardBias");
  CheckDnn(cudnnConvolutionBackwardFilter(h, &kOne, x_, in.ptr(), y_, dout.ptr(), conv_, a.filter,
                                          ctx_->Workspace(a.filter_bytes), a.filter_bytes, &kZero, wdesc_,
                                          weight_.grad.ptr()),
           "cudnnConvolutionBackwardFilter");
  if (!din) return;
  din->ResizeLike(in, in.shape);
  CheckDnn(cudnnConvolutionBackwardData(h, &kOne, wdesc_, weight_.value.ptr(), y_, dout.ptr(), conv_, a.data,
                                        ctx_->Workspace(a.data_bytes), a.data_bytes, &kZero, x_, din->ptr()),
           "cudnnConvolutionBackwardData");
}

}  // namespace hoop::train
