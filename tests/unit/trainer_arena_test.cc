// The gradient arena (trainer/gradient_arena.h): the model's gradients become views of one
// array in backward's order, cut into buckets at layer boundaries, and backward writes the same
// bits through them as into tensors of their own.
#include <catch2/catch.hpp>
#include <set>
#include <stdexcept>

#include "tests/unit/layer_check.h"
#include "trainer/gradient_arena.h"
#include "trainer/model.h"

using namespace hoop::train;

namespace {
// One forward and backward of `model` on a fixed batch; its gradients, parameter by parameter.
std::vector<std::vector<float>> Gradients(Model& model, ThreadPool& pool) {
  const Tensor in = Random({3, 1, 28, 28}, 7);
  const Tensor& out = model.net.Forward(in, Mode::kTrain, pool);
  const Tensor dout = Random(out.shape, 8);
  model.net.Backward(in, dout, nullptr, pool);
  std::vector<std::vector<float>> g;
  for (Param* p : model.net.Params()) g.emplace_back(p->grad.ptr(), p->grad.ptr() + p->grad.size());
  return g;
}
}  // namespace

TEST_CASE("the gradient arena holds every gradient in backward's order, in buckets cut at layers", "[trainer]") {
  ThreadPool pool(1);
  auto plain = BuildModel("resnet", 3), arena = BuildModel("resnet", 3);
  REQUIRE((plain.ok() && arena.ok()));
  Model& m = **arena;
  std::vector<Layer*> backward;
  for (auto it = m.net.layers().rbegin(); it != m.net.layers().rend(); ++it) backward.push_back(it->get());
  const size_t cap = 16 << 10;
  m.grads.Bind(backward, cap);
  REQUIRE(m.grads.bound());
  CHECK_THROWS_AS(m.grads.Bind(backward, cap), std::logic_error);

  // Contiguous, last layer first; every layer with parameters in exactly one bucket.
  const float* at = m.grads.BucketData(0);
  std::set<int> seen;
  for (Layer* layer : backward) {
    const int b = m.grads.BucketOf(layer);
    if (layer->Params().empty()) {
      CHECK(b == -1);
      continue;
    }
    REQUIRE(b >= 0);
    seen.insert(b);
    for (Param* p : layer->Params()) {
      CHECK(p->grad.ptr() == at);
      CHECK(p->grad.external == at);
      at += p->grad.size();
    }
  }
  CHECK(static_cast<size_t>(at - m.grads.BucketData(0)) == m.grads.floats());
  const auto& buckets = m.grads.buckets();
  CHECK(seen.size() == buckets.size());
  CHECK(buckets.size() > 1);
  size_t next = 0;
  for (size_t b = 0; b < buckets.size(); ++b) {
    CHECK(buckets[b].offset == next);
    next += buckets[b].count;
    // A bucket closes at the first layer boundary past the cap: all but the last reach it.
    if (b + 1 < buckets.size()) CHECK(buckets[b].count * sizeof(float) >= cap);
  }
  CHECK(next == m.grads.floats());

  // Backward writes the same bits into the arena as into gradients of their own.
  CHECK(Gradients(m, pool) == Gradients(**plain, pool));

  // A view keeps its size and place; a copy owns its values.
  Param* first = m.net.Params().front();
  CHECK_THROWS_AS(first->grad.Resize({first->grad.shape.n + 1}), std::logic_error);
  first->grad.Resize(first->grad.shape, true);
  CHECK(first->grad.ptr()[0] == 0.0f);
  Tensor copy = first->grad;
  CHECK(copy.external == nullptr);
  CHECK(copy.ptr() != first->grad.ptr());
  copy.ptr()[0] = 5.0f;
  CHECK(first->grad.ptr()[0] == 0.0f);
}
