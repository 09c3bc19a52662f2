// The oneDNN back end of the trainer's layers (layer_factory.h) against numerical gradients and
// against the hand-written layers, in plain and blocked layouts; the layout conversions; and the
// whole models, whose forward and backward must agree between the two back ends.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <string>
#include <utility>

#include "trainer/batchnorm.h"
#include "trainer/chain.h"
#include "trainer/layer_factory.h"
#include "trainer/layout.h"
#include "trainer/loss.h"
#include "trainer/model.h"
#include "trainer/pool.h"
#include "trainer/relu.h"
#include "tests/unit/layer_check.h"

using namespace hoop::train;

namespace {

bool Skip(const char* what) {
  if (HaveOneDnn()) {
    SetOneDnnThreads(1);
    return false;
  }
  WARN("SKIPPED: " << what << ": this build has no oneDNN (libdnnl-dev)");
  return true;
}

// A chain of oneDNN's batch norm (with ReLU fused in when `relu`), made through its factory so
// that this file builds without oneDNN too.
Chain DnnlBatchNorm(int channels, bool relu) {
  Chain c;
  OneDnnLayerFactory()->AddBatchNorm(c, "bn", channels, relu ? "relu" : "");
  REQUIRE(c.layers().size() == 1);  // one layer, ReLU fused
  return c;
}

// a (any layout) equals b (any layout), each element within `margin`.
void Same(const Tensor& a, const Tensor& b, double margin) {
  REQUIRE(a.shape == b.shape);
  Tensor pa, pb;
  Relayout(a, 0, pa);
  Relayout(b, 0, pb);
  for (size_t j = 0; j < pa.size(); ++j) {
    INFO("element " << j);
    REQUIRE(pb.data[j] == Approx(pa.data[j]).margin(margin));
  }
}

// Runs `layer` forward (training) and backward on x in layout `block`, with dy given plain.
void Run(Layer& layer, const Tensor& x_plain, const Tensor& dy_plain, int block, Tensor& y, Tensor& dx) {
  ThreadPool pool(1);
  Tensor x, dy;
  Relayout(x_plain, block, x);
  layer.Forward(x, y, Mode::kTrain, pool);
  Relayout(dy_plain, y.block, dy);
  layer.Backward(x, y, dy, &dx, pool);
  CHECK(dx.block == x.block);
}

}  // namespace

TEST_CASE("layouts: plain and blocked convert both ways and back", "[trainer][layers]") {
  Tensor x = Random({3, 32, 5, 7}, 1), b16, b8, back;
  Relayout(x, 16, b16);
  CHECK(b16.block == 16);
  // plain[n][c][h][w] is blocked[n][c / 16][h][w][c % 16]
  const int n = 2, c = 19, h = 3, w = 4;
  CHECK(b16.data[(((n * 2 + c / 16) * 5 + h) * 7 + w) * 16 + c % 16] == x.data[((n * 32 + c) * 5 + h) * 7 + w]);
  Relayout(b16, 8, b8);
  Relayout(b8, 0, back);
  CHECK(back.block == 0);
  CHECK(back.data == x.data);
}

TEST_CASE("batch norm on oneDNN: gradients, statistics, evaluation, blocked layouts", "[trainer][layers]") {
  if (Skip("batch norm on oneDNN")) return;
  std::mt19937 rng(8);
  Chain made = DnnlBatchNorm(3, false);
  Layer& bn = *made.layers()[0];
  for (Param* p : bn.Params()) Fill(p->value, rng, 0.5f);
  Tensor x = Random({4, 3, 5, 5}, 9);
  for (float& v : x.data) v = v * 2 + 1;
  CheckLayer(bn, x);

  // The same as BatchNorm (+ Relu) on 16 channels, plain and blocked, with and without ReLU.
  for (bool relu : {false, true})
    for (int block : {0, 8, 16}) {
      INFO("relu " << relu << ", block " << block);
      BatchNorm native("bn", 16);
      Chain made = DnnlBatchNorm(16, relu);
      Layer& dnnl = *made.layers()[0];
      for (size_t i = 0; i < 2; ++i) {
        std::mt19937 fill(30 + i);
        Fill(native.Params()[i]->value, fill, 0.5f);
        dnnl.Params()[i]->value = native.Params()[i]->value;
      }
      Chain ref;
      ref.Add(std::make_unique<BatchNorm>(native));
      if (relu) ref.Add(std::make_unique<Relu>("relu"));
      Tensor xin = Random({3, 16, 6, 5}, 40), dy = Random({3, 16, 6, 5}, 41), dxa, ya, yb, dxb;
      ThreadPool pool(1);
      ya = ref.Forward(xin, Mode::kTrain, pool);
      ref.Backward(xin, dy, &dxa, pool);
      Run(dnnl, xin, dy, block, yb, dxb);
      CHECK(yb.block == block);
      Same(ya, yb, 1e-4);
      Same(dxa, dxb, 1e-4);
      auto pa = ref.Params(), pb = dnnl.Params();
      for (size_t i = 0; i < 2; ++i)
        for (size_t j = 0; j < 16; ++j) CHECK(pb[i]->grad.data[j] == Approx(pa[i]->grad.data[j]).margin(1e-3));
      auto ba = ref.Buffers(), bb = dnnl.Buffers();  // running mean and (unbiased) variance
      for (size_t i = 0; i < 2; ++i)
        for (size_t j = 0; j < 16; ++j) CHECK(bb[i].second->data[j] == Approx(ba[i].second->data[j]).margin(1e-5));
      Tensor ea, eb, xb;
      ea = ref.Forward(xin, Mode::kEval, pool);
      Relayout(xin, block, xb);
      dnnl.Forward(xb, eb, Mode::kEval, pool);
      Same(ea, eb, 1e-4);
    }
}

TEST_CASE("max pooling on oneDNN: gradients and the same windows as MaxPool, odd sizes", "[trainer][layers]") {
  if (Skip("max pooling on oneDNN")) return;
  std::mt19937 rng(10);
  auto pool = OneDnnLayerFactory()->MaxPool("pool", 2);
  Tensor p({2, 3, 6, 4});
  FillSpaced(p, rng);
  CheckLayer(*pool, p, 1e-2f);
  for (int block : {0, 16}) {
    INFO("block " << block);
    MaxPool native("pool", 2);
    auto dnnl = OneDnnLayerFactory()->MaxPool("pool", 2);
    Tensor x({2, 16, 7, 9});  // 7 x 9: the last row and column belong to no window
    FillSpaced(x, rng);
    Tensor ya, dxa, yb, dxb;
    Run(native, x, Random({2, 16, 3, 4}, 12), 0, ya, dxa);
    Run(*dnnl, x, Random({2, 16, 3, 4}, 12), block, yb, dxb);
    CHECK(yb.shape == Shape{2, 16, 3, 4});
    Same(ya, yb, 0);
    Same(dxa, dxb, 0);
  }
}

TEST_CASE("ReLU and global average pooling on oneDNN: gradients and the hand-written results", "[trainer][layers]") {
  if (Skip("ReLU and global average pooling on oneDNN")) return;
  auto make = OneDnnLayerFactory();
  std::mt19937 rng(21);
  auto relu = make->Relu("relu");
  Tensor x({2, 3, 4, 4});
  FillSpaced(x, rng);
  CheckLayer(*relu, x, 1e-2f);
  auto gap = make->GlobalAvgPool("gap");
  CheckLayer(*gap, Random({3, 4, 3, 5}, 22));
  for (int block : {0, 8, 16}) {
    INFO("block " << block);
    Tensor in = Random({3, 16, 5, 7}, 23), dy = Random({3, 16, 5, 7}, 24), dg = Random({3, 16, 1, 1}, 25);
    Relu native_relu("relu");
    GlobalAvgPool native_gap("gap");
    Tensor ya, dxa, yb, dxb;
    Run(native_relu, in, dy, 0, ya, dxa);
    Run(*relu, in, dy, block, yb, dxb);
    CHECK(yb.block == block);
    Same(ya, yb, 0);
    Same(dxa, dxb, 0);
    Run(native_gap, in, dg, 0, ya, dxa);
    Run(*gap, in, dg, block, yb, dxb);
    Same(ya, yb, 1e-6);
    Same(dxa, dxb, 1e-6);
  }
}

TEST_CASE("models on oneDNN: the same outputs and gradients as the hand-written layers", "[trainer][layers]") {
  if (Skip("models on oneDNN")) return;
  for (const char* name : {"lenet", "resnet"}) {
    INFO(name);
    auto a = BuildModel(name, 5), b = BuildModel(name, 5, Layers::kOneDnn);
    REQUIRE((a.ok() && b.ok()));
    ThreadPool pool(1);
    Tensor x = Random({6, 1, 28, 28}, 13);
    const std::vector<uint8_t> labels = {0, 1, 2, 3, 4, 9};
    Tensor ga, gb;
    const Tensor& za = (*a)->net.Forward(x, Mode::kTrain, pool);
    const Tensor& zb = (*b)->net.Forward(x, Mode::kTrain, pool);
    CHECK(zb.block == 0);  // logits come out plain
    Same(za, zb, 1e-4);
    SoftmaxCrossEntropy(za, labels, 1.0f, &ga);
    SoftmaxCrossEntropy(zb, labels, 1.0f, &gb);
    (*a)->net.Backward(x, ga, nullptr, pool);
    (*b)->net.Backward(x, gb, nullptr, pool);
    auto pa = (*a)->net.Params(), pb = (*b)->net.Params();
    REQUIRE(pa.size() == pb.size());
    for (size_t i = 0; i < pa.size(); ++i) {
      INFO(pa[i]->name);
      REQUIRE(pa[i]->name == pb[i]->name);
      for (size_t j = 0; j < pa[i]->grad.size(); ++j)
        REQUIRE(pb[i]->grad.data[j] == Approx(pa[i]->grad.data[j]).margin(1e-4).epsilon(1e-3));
    }
    // Evaluation mode (running statistics) agrees too.
    Same((*a)->net.Forward(x, Mode::kEval, pool), (*b)->net.Forward(x, Mode::kEval, pool), 1e-4);
  }
}

// The largest |a - b| over the elements (any layouts), and the largest |a|.
static std::pair<double, double> Gap(const Tensor& a, const Tensor& b) {
  Tensor pa, pb;
  Relayout(a, 0, pa);
  Relayout(b, 0, pb);
  double gap = 0, top = 0;
  for (size_t j = 0; j < pa.size(); ++j) {
    gap = std::max(gap, static_cast<double>(std::fabs(pa.data[j] - pb.data[j])));
    top = std::max(top, static_cast<double>(std::fabs(pa.data[j])));
  }
  return {gap, top};
}

TEST_CASE("convolution in bf16 on oneDNN: f32 results within bf16's rounding, weights kept f32", "[trainer][layers]") {
  if (Skip("bf16 convolution on oneDNN")) return;
  if (const std::string missing = OneDnnBf16Missing(); !missing.empty()) {
    WARN("SKIPPED: bf16 convolution on oneDNN: " << missing);
    return;
  }
  auto f32 = OneDnnLayerFactory(false), bf16 = OneDnnLayerFactory(true);
  for (bool bias : {false, true})
    for (int block : {0, 16}) {
      INFO("bias " << bias << ", block " << block);
      const ConvSpec spec{16, 32, 3, 1, 1, bias};
      std::mt19937 r1(5), r2(5);
      auto a = f32->Conv("c", spec, r1), b = bf16->Conv("c", spec, r2);
      Tensor x = Random({4, 16, 9, 9}, 51), dy = Random({4, 32, 9, 9}, 52), ya, yb, dxa, dxb;
      Run(*a, x, dy, block, ya, dxa);
      Run(*b, x, dy, block, yb, dxb);
      // Each product's operands carry bf16's 8 bits (relative rounding 2^-9 each), summed in f32
      // over 144 terms: within 2% of the largest value, and not f32's own result (bf16 ran).
      for (auto [ga, gb] : {std::pair<const Tensor*, const Tensor*>{&ya, &yb}, {&dxa, &dxb}}) {
        const auto [gap, top] = Gap(*ga, *gb);
        CHECK(gap < 0.02 * top);
        CHECK(gap > 1e-6 * top);
      }
      auto pa = a->Params(), pb = b->Params();
      for (size_t i = 0; i < pa.size(); ++i) {
        const auto [gap, top] = Gap(pa[i]->grad, pb[i]->grad);
        CHECK(gap < 0.02 * top);
        CHECK(pa[i]->value.data == pb[i]->value.data);  // the master weights: untouched f32
      }
    }
}
