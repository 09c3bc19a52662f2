// The trainer's layers against numerical gradients (layer_check.h), and the oneDNN convolution
// against the hand-written one.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>
#include <functional>
#include <random>
#include <set>

#include "trainer/batchnorm.h"
#include "trainer/conv2d.h"
#include "trainer/layer_factory.h"
#include "trainer/linear.h"
#include "trainer/loss.h"
#include "trainer/model.h"
#include "trainer/pool.h"
#include "trainer/relu.h"
#include "trainer/residual.h"
#include "tests/unit/layer_check.h"

using namespace hoop::train;

TEST_CASE("host tensors: placement, resizing like another, values in and out", "[trainer][layers]") {
  Tensor t = Random({2, 3, 4, 5}, 1);
  t.Place(-1);  // already host memory: nothing changes
  CHECK((!t.on_device() && t.device() == -1 && t.size() == 120));
  std::vector<float> out;
  t.Download(out);
  CHECK(out == t.data);
  Tensor u;
  u.ResizeLike(t, {1, 2, 3, 1}, true);
  CHECK((!u.on_device() && u.size() == 6 && u.data == std::vector<float>(6, 0.0f)));
  const float values[6] = {1, 2, 3, 4, 5, 6};
  u.Upload(values, 6);
  CHECK(u.data == std::vector<float>(values, values + 6));
  Tensor copy = u;  // a host tensor copies its values and stays on the host
  CHECK((copy.data == u.data && !copy.on_device()));
}

TEST_CASE("conv2d gradients: padding, stride, bias, 1x1", "[trainer][layers]") {
  std::mt19937 rng(1);
  Conv2d a("a", ConvSpec{3, 4, 3, 1, 1, true}, rng);
  for (Param* p : a.Params()) Fill(p->value, rng, 0.5f);
  CheckLayer(a, Random({2, 3, 7, 6}, 2));
  Conv2d b("b", ConvSpec{2, 5, 5, 2, 2, false}, rng);
  CheckLayer(b, Random({3, 2, 9, 9}, 3));
  Conv2d c("c", ConvSpec{4, 3, 1, 2, 0, false}, rng);
  CheckLayer(c, Random({2, 4, 8, 8}, 4), 1e-2f, 3);
}

TEST_CASE("conv2d on oneDNN: gradients, and the same results as the hand-written layer", "[trainer][layers]") {
  if (!HaveOneDnn()) {
    WARN("SKIPPED: conv2d on oneDNN: this build has no oneDNN (libdnnl-dev)");
    return;
  }
  SetOneDnnThreads(1);
  const ConvSpec specs[] = {{3, 4, 3, 1, 1, true}, {2, 5, 5, 2, 2, false}, {4, 3, 1, 2, 0, false}};
  const Shape inputs[] = {{2, 3, 7, 6}, {3, 2, 9, 9}, {2, 4, 8, 8}};
  for (int k = 0; k < 3; ++k) {
    INFO("case " << k);
    std::mt19937 rng_a(20 + k), rng_b(20 + k);
    Conv2d native("c", specs[k], rng_a);
    auto made = OneDnnLayerFactory()->Conv("c", specs[k], rng_b);  // the same initialisation from the same seed
    Layer& dnnl = *made;
    for (size_t i = 0; i < native.Params().size(); ++i) {
      std::mt19937 fill(30 + k);
      Fill(native.Params()[i]->value, fill, 0.5f);
      dnnl.Params()[i]->value = native.Params()[i]->value;
    }
    CheckLayer(dnnl, Random(inputs[k], 40 + k), 1e-2f, k == 2 ? 3 : 2);
    ThreadPool pool(1);
    Tensor x = Random(inputs[k], 50 + k), ya, yb, dxa, dxb;
    native.Forward(x, ya, Mode::kTrain, pool);
    dnnl.Forward(x, yb, Mode::kTrain, pool);
    REQUIRE(ya.shape == yb.shape);
    for (size_t j = 0; j < ya.size(); ++j) CHECK(yb.data[j] == Approx(ya.data[j]).margin(1e-5));
    Tensor dy = Random(ya.shape, 60 + k);
    native.Backward(x, ya, dy, &dxa, pool);
    dnnl.Backward(x, yb, dy, &dxb, pool);
    for (size_t j = 0; j < dxa.size(); ++j) CHECK(dxb.data[j] == Approx(dxa.data[j]).margin(1e-5));
    for (size_t i = 0; i < native.Params().size(); ++i)
      for (size_t j = 0; j < native.Params()[i]->grad.size(); ++j)
        CHECK(dnnl.Params()[i]->grad.data[j] == Approx(native.Params()[i]->grad.data[j]).margin(1e-4));
  }
}

TEST_CASE("linear gradients", "[trainer][layers]") {
  std::mt19937 rng(5);
  Linear l("fc", 2 * 3 * 3, 7, rng);
  for (Param* p : l.Params()) Fill(p->value, rng, 0.5f);
  CheckLayer(l, Random({5, 2, 3, 3}, 6));
}

TEST_CASE("batch norm gradients in training mode", "[trainer][layers]") {
  std::mt19937 rng(8);
  BatchNorm bn("bn", 3);
  for (Param* p : bn.Params()) Fill(p->value, rng, 0.5f);
  Tensor x = Random({4, 3, 5, 5}, 9);
  for (float& v : x.data) v = v * 2 + 1;
  CheckLayer(bn, x);
}

TEST_CASE("batch norm: running statistics and evaluation", "[trainer][layers]") {
  BatchNorm bn("bn", 2);
  ThreadPool pool(1);
  Tensor x({2, 2, 1, 2}), y;
  x.data = {1, 3, 10, 10, 5, 7, 10, 10};  // channel 0: 1 3 5 7 (mean 4), channel 1: all 10
  bn.Forward(x, y, Mode::kTrain, pool);
  auto bufs = bn.Buffers();
  CHECK(bufs[0].second->data[0] == Approx(0.1 * 4));
  CHECK(bufs[1].second->data[0] == Approx(0.9 + 0.1 * (20.0 / 3)));  // unbiased variance 20/3
  CHECK(y.data[0] == Approx(-3 / std::sqrt(5 + BatchNorm::kEps)));
  bn.Forward(x, y, Mode::kEval, pool);
  CHECK(y.data[0] == Approx((1 - 0.4) / std::sqrt(0.9 + 0.1 * 20.0 / 3 + BatchNorm::kEps)));
}

TEST_CASE("relu, max pool and global average pool gradients", "[trainer][layers]") {
  std::mt19937 rng(10);
  Relu relu("relu");
  Tensor x({2, 3, 4, 4});
  FillSpaced(x, rng);
  CheckLayer(relu, x, 1e-2f);
  MaxPool pool("pool", 2);
  Tensor p({2, 3, 6, 4});
  FillSpaced(p, rng);
  CheckLayer(pool, p, 1e-2f);
  GlobalAvgPool gap("gap");
  CheckLayer(gap, Random({3, 4, 3, 5}, 11));
}

TEST_CASE("residual block gradients, identity and projection shortcuts", "[trainer][layers]") {
  std::mt19937 rng(12);
  LayerFactory native;
  Residual same("same", 3, 3, 1, rng, native);
  CheckLayer(same, Random({3, 3, 6, 6}, 13));
  Residual down("down", 2, 4, 2, rng, native);
  CheckLayer(down, Random({3, 2, 6, 6}, 14));
}

TEST_CASE("softmax cross-entropy: value, accuracy and scaled gradient", "[trainer][layers]") {
  Tensor z({3, 4});
  z.data = {1, 2, 3, 4, 0, 0, 0, 0, 5, -1, 0, 2};
  std::vector<uint8_t> y = {3, 1, 2};
  Tensor g;
  LossResult r = SoftmaxCrossEntropy(z, y, 0.5f, &g);
  double l0 = std::log(std::exp(1) + std::exp(2) + std::exp(3) + std::exp(4)) - 4;
  double l1 = std::log(4.0);
  double l2 = std::log(std::exp(5) + std::exp(-1) + std::exp(0) + std::exp(2)) - 0;
  CHECK(r.loss_sum == Approx(l0 + l1 + l2));
  CHECK(r.correct == 1);  // only the first row's argmax is its label
  std::mt19937 rng(15);
  auto loss = [&] { return SoftmaxCrossEntropy(z, y, 1.0f, nullptr).loss_sum * 0.5; };
  CheckPositions("logits", z, g, loss, 1e-2f, rng, 12);
}

TEST_CASE("models: shapes and parameter counts", "[trainer][layers]") {
  auto lenet = BuildModel("lenet", 1);
  REQUIRE(lenet.ok());
  CHECK((*lenet)->net.OutShape({5, 1, 28, 28}) == Shape{5, 10, 1, 1});
  CHECK((*lenet)->ParamCount() == 416 + 12832 + 96120 + 10164 + 850);
  auto resnet = BuildModel("resnet", 1);
  REQUIRE(resnet.ok());
  CHECK((*resnet)->net.OutShape({5, 1, 28, 28}) == Shape{5, 10, 1, 1});
  if (HaveOneDnn()) {  // the same model, parameter for parameter, on either back end
    auto a = BuildModel("resnet", 3), b = BuildModel("resnet", 3, Layers::kOneDnn);
    REQUIRE((a.ok() && b.ok()));
    auto pa = (*a)->net.Params(), pb = (*b)->net.Params();
    REQUIRE(pa.size() == pb.size());
    for (size_t i = 0; i < pa.size(); ++i)
      CHECK((pa[i]->name == pb[i]->name && pa[i]->value.data == pb[i]->value.data));
  } else {
    auto none = BuildModel("lenet", 1, Layers::kOneDnn);
    CHECK_THAT(none.status().message(), Catch::Contains("built without oneDNN"));
  }
  // ResNet-18/34 for 32x32 images; with 3 channels the parameter counts of the CIFAR-10 versions
  // that everyone trains (11173962 and 21282122).
  auto r18 = BuildModel("resnet18", 1, Layers::kNative, 3), r34 = BuildModel("resnet34", 1, Layers::kNative, 3);
  REQUIRE((r18.ok() && r34.ok()));
  CHECK((*r18)->ParamCount() == 11173962);
  CHECK((*r34)->ParamCount() == 21282122);
  CHECK((*r18)->input == Shape{0, 3, 32, 32});
  CHECK((*r34)->net.OutShape({2, 3, 32, 32}) == Shape{2, 10, 1, 1});
  CHECK((*BuildModel("resnet18", 1))->ParamCount() == 11172810);  // one channel: Fashion-MNIST
  CHECK_THAT(BuildModel("lenet", 1, Layers::kNative, 3).status().message(),
             Catch::Contains("lenet takes 1-channel 28x28 images"));
  auto bad = BuildModel("vgg", 1);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("unknown model 'vgg'"));
  // The same seed builds the same weights; names are unique.
  auto again = BuildModel("lenet", 1);
  auto a = (*lenet)->net.Params(), b = (*again)->net.Params();
  std::set<std::string> names;
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i]->value.data == b[i]->value.data);
    CHECK(names.insert(a[i]->name).second);
  }
}
