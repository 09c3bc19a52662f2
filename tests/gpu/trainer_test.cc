// The trainer's CUDA back end (cuDNN and cuBLAS layers, layer_factory.h) on a GPU: every layer
// against numerical gradients (through a host view of it) and against the hand-written layer
// built from the same seed, the whole models against the hand-written ones, the optimizer's
// step on the device against the host's, device tensors' copies, and a checkpoint of device
// tensors written and read back through host memory.
// TF32 off, so the device computes in f32 as the host does. Without a device, each case skips.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <random>

#include "tests/gpu/gpu_support.h"
#include "tests/unit/layer_check.h"
#include "trainer/chain.h"
#include "trainer/checkpoint.h"
#include "trainer/layer_factory.h"
#include "trainer/loss.h"
#include "trainer/model.h"
#include "trainer/residual.h"
#include "trainer/sgd.h"

using namespace hoop;
using namespace hoop::train;

namespace {

std::unique_ptr<LayerFactory> Gpu() {
  auto f = CudaLayerFactory(0, false);
  INFO(f.status().message());
  REQUIRE(f.ok());
  return std::move(*f);
}

Tensor Up(const Tensor& host) {
  Tensor t;
  t.Place(0);
  t.Resize(host.shape);
  t.Upload(host.ptr(), host.size());
  return t;
}

Tensor Down(const Tensor& dev) {
  Tensor t(dev.shape);
  dev.Download(t.data);
  return t;
}

// A device layer seen from the host, for CheckLayer: host tensors in and out, its parameters
// mirrored in host memory (pushed up before each forward, gradients pulled down after backward).
class HostView : public Layer {
 public:
  explicit HostView(std::unique_ptr<Layer> l) : Layer(l->name()), l_(std::move(l)) {
    for (Param* p : l_->Params()) {
      Param h;
      h.name = p->name;
      h.value = Down(p->value);
      h.grad.Resize(p->value.shape, true);
      mirror_.push_back(std::move(h));
    }
  }
  Shape OutShape(const Shape& in) const override { return l_->OutShape(in); }
  void Forward(const Tensor& in, Tensor& out, Mode mode, ThreadPool& pool) override {
    auto ps = l_->Params();
    for (size_t i = 0; i < ps.size(); ++i) ps[i]->value.Upload(mirror_[i].value.ptr(), mirror_[i].value.size());
    x_ = Up(in);
    l_->Forward(x_, y_, mode, pool);
    out = Down(y_);
  }
  void Backward(const Tensor&, const Tensor&, const Tensor& dout, Tensor* din, ThreadPool& pool) override {
    Tensor dy = Up(dout);
    Tensor dx;
    l_->Backward(x_, y_, dy, din ? &dx : nullptr, pool);
    if (din) *din = Down(dx);
    auto ps = l_->Params();
    for (size_t i = 0; i < ps.size(); ++i) mirror_[i].grad = Down(ps[i]->grad);
  }
  std::vector<Param*> Params() override {
    std::vector<Param*> out;
    for (Param& p : mirror_) out.push_back(&p);
    return out;
  }

 private:
  std::unique_ptr<Layer> l_;
  std::vector<Param> mirror_;
  Tensor x_, y_;
};

void Same(const Tensor& host, const Tensor& dev, double margin, const char* what) {
  Tensor d = Down(dev);
  REQUIRE(d.shape == host.shape);
  for (size_t j = 0; j < host.size(); ++j) {
    INFO(what << " element " << j);
    REQUIRE(d.data[j] == Approx(host.data[j]).margin(margin).epsilon(1e-3));
  }
}

// Forward (training) and backward of `a` (host) and `b` (device) on the same input and output
// gradient; outputs, input gradients and parameter gradients must agree.
void Agree(Layer& a, Layer& b, const Tensor& x, uint32_t seed) {
  ThreadPool pool(1);
  Tensor ya, dxa, yb, dxb;
  Tensor xb = Up(x);
  a.Forward(x, ya, Mode::kTrain, pool);
  b.Forward(xb, yb, Mode::kTrain, pool);
  REQUIRE(yb.on_device());
  Same(ya, yb, 1e-4, "output");
  Tensor dy = Random(ya.shape, seed);
  Tensor dyb = Up(dy);
  a.Backward(x, ya, dy, &dxa, pool);
  b.Backward(xb, yb, dyb, &dxb, pool);
  Same(dxa, dxb, 1e-4, "input gradient");
  auto pa = a.Params(), pb = b.Params();
  REQUIRE(pa.size() == pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i]->name);
    CHECK(pa[i]->name == pb[i]->name);
    Same(pa[i]->grad, pb[i]->grad, 1e-4, "parameter gradient");
  }
}

}  // namespace

TEST_CASE("cuda layers: the same outputs and gradients as the hand-written layers", "[gpu][trainer]") {
  if (!test::HaveGpu()) return;
  auto gpu = Gpu();
  LayerFactory native;
  const ConvSpec specs[] = {
      {3, 5, 3, 1, 1, true}, {4, 6, 3, 2, 1, false}, {2, 3, 1, 2, 0, false}, {1, 16, 5, 1, 2, true}};
  for (const ConvSpec& s : specs) {
    std::mt19937 ra(21), rb(21);
    auto a = native.Conv("conv", s, ra), b = gpu->Conv("conv", s, rb);
    Agree(*a, *b, Random({3, s.in, 9, 8}, 22), 23);
  }
  {
    std::mt19937 ra(24), rb(24);
    auto a = native.Linear("fc", 2 * 3 * 3, 7, ra), b = gpu->Linear("fc", 2 * 3 * 3, 7, rb);
    Agree(*a, *b, Random({5, 2, 3, 3}, 25), 26);
  }
  Chain bna, bnb;
  native.AddBatchNorm(bna, "bn", 3, "");
  gpu->AddBatchNorm(bnb, "bn", 3, "");
  Agree(*bna.layers()[0], *bnb.layers()[0], Random({4, 3, 5, 5}, 27), 28);
  auto ra = native.Relu("relu"), rb = gpu->Relu("relu");
  Agree(*ra, *rb, Random({2, 3, 4, 4}, 29), 30);
  auto pa = native.MaxPool("pool", 2), pb = gpu->MaxPool("pool", 2);
  Agree(*pa, *pb, Random({2, 3, 6, 5}, 31), 32);
  auto ga = native.GlobalAvgPool("gap"), gb = gpu->GlobalAvgPool("gap");
  Agree(*ga, *gb, Random({3, 4, 3, 5}, 33), 34);
  {
    std::mt19937 r1(35), r2(35);
    Residual a("block", 2, 4, 2, r1, native), b("block", 2, 4, 2, r2, *gpu);
    Agree(a, b, Random({3, 2, 6, 6}, 36), 37);
  }
}

TEST_CASE("cuda convolutions with --cudnn-benchmark: measured algorithms, the same results", "[gpu][trainer]") {
  if (!test::HaveGpu()) return;
  auto f = CudaLayerFactory(0, false, false, true);  // TF32 off: the measured choice stays f32
  INFO(f.status().message());
  REQUIRE(f.ok());
  LayerFactory native;
  const ConvSpec specs[] = {{3, 5, 3, 1, 1, true}, {16, 32, 3, 2, 1, false}, {1, 16, 5, 1, 2, true}};
  for (const ConvSpec& s : specs) {
    std::mt19937 ra(41), rb(41);
    auto a = native.Conv("conv", s, ra), b = (*f)->Conv("conv", s, rb);
    Agree(*a, *b, Random({8, s.in, 16, 16}, 42), 43);
  }
  // Deterministic and measured at once: the fastest of the deterministic algorithms.
  auto det = CudaLayerFactory(0, false, true, true);
  REQUIRE(det.ok());
  std::mt19937 ra(44), rb(44);
  auto a = native.Conv("conv", {4, 8, 3, 1, 1, true}, ra), b = (*det)->Conv("conv", {4, 8, 3, 1, 1, true}, rb);
  Agree(*a, *b, Random({4, 4, 12, 12}, 45), 46);
}

TEST_CASE("cuda layers: numerical gradients", "[gpu][trainer]") {
  if (!test::HaveGpu()) return;
  auto gpu = Gpu();
  std::mt19937 rng(40);
  HostView conv(gpu->Conv("conv", ConvSpec{2, 3, 3, 1, 1, true}, rng));
  CheckLayer(conv, Random({2, 2, 6, 5}, 41));
  HostView fc(gpu->Linear("fc", 12, 5, rng));
  CheckLayer(fc, Random({3, 3, 2, 2}, 42));
  Chain bn;
  gpu->AddBatchNorm(bn, "bn", 3, "");
  auto layers = bn.TakeLayers();
  HostView bnv(std::move(layers[0]));
  CheckLayer(bnv, Random({4, 3, 3, 3}, 43));
  HostView relu(gpu->Relu("relu"));
  Tensor x({2, 3, 4, 4});
  FillSpaced(x, rng);
  CheckLayer(relu, x, 1e-2f);
  HostView pool(gpu->MaxPool("pool", 2));
  Tensor p({2, 3, 6, 4});
  FillSpaced(p, rng);
  CheckLayer(pool, p, 1e-2f);
  HostView gap(gpu->GlobalAvgPool("gap"));
  CheckLayer(gap, Random({3, 4, 3, 5}, 44));
  HostView block(std::make_unique<Residual>("block", 3, 3, 1, rng, *gpu));
  CheckLayer(block, Random({3, 3, 6, 6}, 45));
}

TEST_CASE("models on cuda: the same outputs, gradients and optimizer step as the hand-written layers",
          "[gpu][trainer]") {
  if (!test::HaveGpu()) return;
  auto gpu = Gpu();
  for (const char* name : {"lenet", "resnet", "resnet18"}) {
    INFO(name);
    const bool deep = std::string(name) == "resnet18";
    auto a = BuildModel(name, 5, Layers::kNative, deep ? 3 : 1), b = BuildModel(name, 5, *gpu, deep ? 3 : 1);
    REQUIRE((a.ok() && b.ok()));
    REQUIRE((*b)->device == 0);
    CHECK((*a)->ParamCount() == (*b)->ParamCount());
    ThreadPool pool(2);
    Tensor x = Random({deep ? 2 : 6, deep ? 3 : 1, deep ? 32 : 28, deep ? 32 : 28}, 13);
    const std::vector<uint8_t> labels = {0, 1, 2, 3, 4, 9};
    std::vector<uint8_t> l(labels.begin(), labels.begin() + x.shape.n);
    Tensor xb = Up(x);
    const Tensor& za = (*a)->net.Forward(x, Mode::kTrain, pool);
    Tensor zb = Down((*b)->net.Forward(xb, Mode::kTrain, pool));
    for (size_t j = 0; j < za.size(); ++j) REQUIRE(zb.data[j] == Approx(za.data[j]).margin(1e-3).epsilon(1e-3));
    Tensor ga, gb;
    SoftmaxCrossEntropy(za, l, 1.0f, &ga);
    SoftmaxCrossEntropy(zb, l, 1.0f, &gb);
    Tensor gbd = Up(gb);
    (*a)->net.Backward(x, ga, nullptr, pool);
    (*b)->net.Backward(xb, gbd, nullptr, pool);
    auto pa = (*a)->net.Params(), pb = (*b)->net.Params();
    REQUIRE(pa.size() == pb.size());
    for (size_t i = 0; i < pa.size(); ++i) {
      INFO(pa[i]->name);
      REQUIRE(pa[i]->name == pb[i]->name);
      Same(pa[i]->grad, pb[i]->grad, 1e-3, "gradient");
    }
    // One optimizer step on each side, then evaluation (running statistics) on the new weights.
    Sgd sa(pa, 0.9, 5e-4), sb(pb, 0.9, 5e-4, (*b)->math);
    sa.Step(0.05);
    sb.Step(0.05);
    for (size_t i = 0; i < pa.size(); ++i) Same(pa[i]->value, pb[i]->value, 1e-4, pa[i]->name.c_str());
    auto ba = (*a)->net.Buffers(), bb = (*b)->net.Buffers();
    REQUIRE(ba.size() == bb.size());
    for (size_t i = 0; i < ba.size(); ++i) Same(*ba[i].second, *bb[i].second, 1e-4, ba[i].first.c_str());
    const Tensor& ea = (*a)->net.Forward(x, Mode::kEval, pool);
    Tensor eb = Down((*b)->net.Forward(xb, Mode::kEval, pool));
    for (size_t j = 0; j < ea.size(); ++j) REQUIRE(eb.data[j] == Approx(ea.data[j]).margin(1e-3).epsilon(1e-3));
  }
}

TEST_CASE("device tensors: resize, zero, copy, and placement back to the host", "[gpu][trainer]") {
  if (!test::HaveGpu()) return;
  Tensor h = Random({2, 3, 4, 5}, 50);
  Tensor d = Up(h);
  Tensor copy = d;  // a deep copy on the device
  d.Zero();
  Tensor back = Down(copy);
  CHECK(back.data == h.data);
  CHECK(Down(d).data == std::vector<float>(h.size(), 0.0f));
  d.Resize({1, 3, 4, 5});
  CHECK(d.size() == 60);
  copy.Place(-1);
  CHECK(!copy.on_device());
  CHECK(copy.size() == h.size());
}

TEST_CASE("checkpoints of device tensors: written from and read back into device memory", "[gpu][trainer]") {
  if (!test::HaveGpu()) return;
  Tensor a = Up(Random({3, 4, 5, 6}, 60)), b = Up(Random({7}, 61));
  const std::string path = "/tmp/hoop-gpu-ckpt-" + std::to_string(::getpid());
  NamedTensors named{{"a", &a}, {"b", &b}};
  CheckpointInfo info;
  info.model = "lenet";
  REQUIRE(SaveCheckpoint(path, info, named).ok());
  const Tensor ha = Down(a), hb = Down(b);
  a.Zero();
  b.Zero();
  CheckpointInfo got;
  Status s = LoadCheckpoint(path, "lenet", named, &got);
  std::remove(path.c_str());
  INFO(s.message());
  REQUIRE(s.ok());
  CHECK(a.on_device());
  CHECK(Down(a).data == ha.data);
  CHECK(Down(b).data == hb.data);
}
