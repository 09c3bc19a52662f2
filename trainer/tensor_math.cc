#include "trainer/tensor_math.h"

namespace hoop::train {

namespace {

class Host : public TensorMath {
 public:
  void AddRelu(const Tensor& a, const Tensor& b, Tensor& out) override {
    out.Resize(a.shape);
    for (size_t j = 0; j < out.size(); ++j) {
      const float v = a.data[j] + b.data[j];
      out.data[j] = v > 0 ? v : 0.0f;
    }
  }
  void ReluMask(const Tensor& out, const Tensor& dout, Tensor& d) override {
    d.Resize(out.shape);
    for (size_t j = 0; j < out.size(); ++j) d.data[j] = out.data[j] > 0 ? dout.data[j] : 0.0f;
  }
  void Accumulate(const Tensor& x, Tensor& acc) override {
    for (size_t j = 0; j < acc.size(); ++j) acc.data[j] += x.data[j];
  }
  void SgdStep(Tensor& w, const Tensor& g, Tensor& v, float momentum, float weight_decay, float lr) override {
    float* wp = w.ptr();
    const float* gp = g.ptr();
    float* vp = v.ptr();
    for (size_t j = 0, n = v.size(); j < n; ++j) {
      vp[j] = momentum * vp[j] + gp[j] + weight_decay * wp[j];
      wp[j] -= lr * vp[j];
    }
  }
};

}  // namespace

std::shared_ptr<TensorMath> HostMath() { return std::make_shared<Host>(); }

}  // namespace hoop::train
