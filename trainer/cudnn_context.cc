#include "trainer/cudnn_context.h"

#include "common/device.h"

namespace hoop::train {

void CheckDnn(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) throw DeviceError(std::string(what) + ": " + cudnnGetErrorString(s));
}

void CheckBlas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw DeviceError(std::string(what) + ": " + cublasGetStatusName(s) + " (" + cublasGetStatusString(s) + ")");
}

std::shared_ptr<CudnnContext> CudnnContext::Create(int device, bool tf32, bool deterministic, bool benchmark) {
  if (Status s = CudaSetDevice(device); !s.ok())
    throw DeviceError("CUDA device " + std::to_string(device) + ": " + s.message());
  std::shared_ptr<CudnnContext> c(new CudnnContext());
  c->device_ = device;
  c->tf32_ = tf32;
  c->deterministic_ = deterministic;
  c->benchmark_ = benchmark;
  CheckDnn(cudnnCreate(&c->dnn_), "cudnnCreate");
  CheckBlas(cublasCreate(&c->blas_), "cublasCreate");
  // Both stay on the legacy default stream (their default), as every device call of the trainer.
  return c;
}

CudnnContext::~CudnnContext() {
  if (blas_) cublasDestroy(blas_);
  if (dnn_) cudnnDestroy(dnn_);
}

void* CudnnContext::Workspace(size_t bytes) {
  const size_t floats = (bytes + sizeof(float) - 1) / sizeof(float);
  if (floats > work_.capacity()) work_.Reserve(device_, floats);
  return work_.get();
}

TensorDesc::TensorDesc() { CheckDnn(cudnnCreateTensorDescriptor(&d_), "cudnnCreateTensorDescriptor"); }

TensorDesc::~TensorDesc() {
  if (d_) cudnnDestroyTensorDescriptor(d_);
}

const TensorDesc& TensorDesc::Set(const Shape& s) {
  if (s == shape_) return *this;
  CheckDnn(cudnnSetTensor4dDescriptor(d_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s.n, s.c, s.h, s.w),
           "cudnnSetTensor4dDescriptor");
  shape_ = s;
  return *this;
}

void PlaceParam(const Param& host, int device, Param& out) {
  out.name = host.name;
  out.value.Place(device);
  out.value.Resize(host.value.shape);
  out.value.Upload(host.value.ptr(), host.value.size());
  out.grad.Place(device);
  out.grad.Resize(host.value.shape, true);
}

}  // namespace hoop::train
