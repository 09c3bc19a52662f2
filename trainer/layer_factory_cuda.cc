// The CUDA back end's factory (layer_factory.h): cuDNN and cuBLAS layers on one device, sharing
// one CudnnContext, and the arithmetic between them (tensor_math.h) as library calls on that
// device: a residual sum by cudnnOpTensor and its ReLU by cudnnActivationForward (in place), the
// ReLU's gradient by cudnnActivationBackward, sums into a gradient by cudnnAddTensor, and the
// optimizer's update as cuBLAS's scal and axpy (v = momentum v; v += g; v += wd w; w -= lr v).
#include "common/device.h"
#include "trainer/batchnorm_cudnn.h"
#include "trainer/conv2d_cudnn.h"
#include "trainer/layer_factory.h"
#include "trainer/linear_cublas.h"
#include "trainer/pool_cudnn.h"

namespace hoop::train {

namespace {

const float kOne = 1.0f, kZero = 0.0f;

class CudaMath : public TensorMath {
 public:
  explicit CudaMath(std::shared_ptr<CudnnContext> ctx) : ctx_(std::move(ctx)) {
    CheckDnn(cudnnCreateOpTensorDescriptor(&add_), "cudnnCreateOpTensorDescriptor");
    CheckDnn(cudnnSetOpTensorDescriptor(add_, CUDNN_OP_TENSOR_ADD, CUDNN_DATA_FLOAT, CUDNN_NOT_PROPAGATE_NAN),
             "cudnnSetOpTensorDescriptor");
    CheckDnn(cudnnCreateActivationDescriptor(&relu_), "cudnnCreateActivationDescriptor");
    CheckDnn(cudnnSetActivationDescriptor(relu_, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0),
             "cudnnSetActivationDescriptor");
  }
  ~CudaMath() override {
    if (relu_) cudnnDestroyActivationDescriptor(relu_);
    if (add_) cudnnDestroyOpTensorDescriptor(add_);
  }

  void AddRelu(const Tensor& a, const Tensor& b, Tensor& out) override {
    out.ResizeLike(a, a.shape);
    x_.Set(a.shape);
    CheckDnn(cudnnOpTensor(ctx_->dnn(), add_, &kOne, x_, a.ptr(), &kOne, x_, b.ptr(), &kZero, x_, out.ptr()),
             "cudnnOpTensor (add)");
    CheckDnn(cudnnActivationForward(ctx_->dnn(), relu_, &kOne, x_, out.ptr(), &kZero, x_, out.ptr()),
             "cudnnActivationForward");
  }
  void ReluMask(const Tensor& out, const Tensor& dout, Tensor& d) override {
    d.ResizeLike(out, out.shape);
    x_.Set(out.shape);
    CheckDnn(cudnnActivationBackward(ctx_->dnn(), relu_, &kOne, x_, out.ptr(), x_, dout.ptr(), x_, out.ptr(), &kZero,
                                     x_, d.ptr()),
             "cudnnActivationBackward");
  }
  void Accumulate(const Tensor& x, Tensor& acc) override {
    x_.Set(acc.shape);
    CheckDnn(cudnnAddTensor(ctx_->dnn(), &kOne, x_, x.ptr(), &kOne, x_, acc.ptr()), "cudnnAddTensor");
  }
  void SgdStep(Tensor& w, const Tensor& g, Tensor& v, float momentum, float weight_decay, float lr) override {
    cublasHandle_t h = ctx_->blas();
    const int n = static_cast<int>(v.size());
    const float step = -lr;
    CheckBlas(cublasSscal(h, n, &momentum, v.ptr(), 1), "cublasSscal (momentum)");
    CheckBlas(cublasSaxpy(h, n, &kOne, g.ptr(), 1, v.ptr(), 1), "cublasSaxpy (gradient)");
    if (weight_decay != 0)
      CheckBlas(cublasSaxpy(h, n, &weight_decay, w.ptr(), 1, v.ptr(), 1), "cublasSaxpy (weight decay)");
    CheckBlas(cublasSaxpy(h, n, &step, v.ptr(), 1, w.ptr(), 1), "cublasSaxpy (update)");
  }

 private:
  std::shared_ptr<CudnnContext> ctx_;
  cudnnOpTensorDescriptor_t add_ = nullptr;
  cudnnActivationDescriptor_t relu_ = nullptr;
  TensorDesc x_;
};

class CudaFactory : public LayerFactory {
 public:
  explicit CudaFactory(std::shared_ptr<CudnnContext> ctx)
      : ctx_(std::move(ctx)), math_(std::make_shared<CudaMath>(ctx_)) {}
  std::unique_ptr<Layer> Conv(std::string name, ConvSpec spec, std::mt19937& rng) const override {
    return std::make_unique<CudnnConv2d>(std::move(name), spec, rng, ctx_);
  }
  std::unique_ptr<Layer> MaxPool(std::string name, int k) const override {
    return std::make_unique<CudnnPool>(std::move(name), k, ctx_);
  }
  std::unique_ptr<Layer> GlobalAvgPool(std::string name) const override {
    return std::make_unique<CudnnPool>(std::move(name), 0, ctx_);
  }
  std::unique_ptr<Layer> Relu(std::string name) const override {
    return std::make_unique<CudnnRelu>(std::move(name), ctx_);
  }
  std::unique_ptr<Layer> Linear(std::string name, int in, int out, std::mt19937& rng) const override {
    return std::make_unique<CublasLinear>(std::move(name), in, out, rng, ctx_);
  }
  void AddBatchNorm(Chain& chain, const std::string& name, int channels, const std::string& relu_name) const override {
    chain.Add(std::make_unique<CudnnBatchNorm>(name, channels, ctx_));
    if (!relu_name.empty()) chain.Add(Relu(relu_name));
  }
  std::shared_ptr<TensorMath> Math() const override { return math_; }
  int device() const override { return ctx_->device(); }

 private:
  std::shared_ptr<CudnnContext> ctx_;
  std::shared_ptr<CudaMath> math_;
};

}  // namespace

bool HaveCudaLayers() { return true; }

StatusOr<std::unique_ptr<LayerFactory>> CudaLayerFactory(int device, bool tf32, bool deterministic, bool benchmark) {
  HOOP_ASSIGN_OR_RETURN(int count, CudaDeviceCount());
  if (device < 0 || device >= count)
    return InvalidArgument("CUDA device " + std::to_string(device) + " does not exist: this process sees " +
                           std::to_string(count) + " device(s)");
  try {
    return std::unique_ptr<LayerFactory>(
        std::make_unique<CudaFactory>(CudnnContext::Create(device, tf32, deterministic, benchmark)));
  } catch (const DeviceError& e) {
    return Unavailable(std::string("the cuDNN/cuBLAS layers on CUDA device ") + std::to_string(device) + ": " +
                       e.what());
  }
}

}  // namespace hoop::train
