// Knowledge distillation's parts (--strategy distill): the loss against soft targets (its value
// by the formula, its gradient by finite differences, its limits), softmax at a temperature, the
// checkpoints --teacher names (a list, a sweep's FILE.K), a checkpoint read for its weights only,
// and a teacher's soft targets against its own forward pass, alone and as an ensemble.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>

#include "tests/unit/layer_check.h"
#include "trainer/checkpoint.h"
#include "trainer/compute.h"
#include "trainer/loss.h"
#include "trainer/model.h"
#include "trainer/teacher.h"

using namespace hoop;
using namespace hoop::train;

namespace {

// The loss of one row by the formula in loss.h, in double.
double RowLoss(const float* z, const float* q, int k, int y, double t, double a) {
  auto log_softmax = [&](double s, int j) {
    double mx = -1e300, sum = 0;
    for (int i = 0; i < k; ++i) mx = std::max(mx, z[i] / s);
    for (int i = 0; i < k; ++i) sum += std::exp(z[i] / s - mx);
    return z[j] / s - mx - std::log(sum);
  };
  double kl = 0;
  for (int j = 0; j < k; ++j)
    if (q[j] > 0) kl += q[j] * (std::log(q[j]) - log_softmax(t, j));
  return a * t * t * kl - (1 - a) * log_softmax(1, y);
}

std::vector<float> RandomSoft(int n, int k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.01f, 1.0f);
  std::vector<float> q(static_cast<size_t>(n) * k);
  for (int i = 0; i < n; ++i) {
    float sum = 0;
    for (int j = 0; j < k; ++j) sum += q[i * k + j] = u(rng);
    for (int j = 0; j < k; ++j) q[i * k + j] /= sum;
  }
  return q;
}

std::string TmpDir() {
  char tmpl[] = "/tmp/hoop-distill-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  return tmpl;
}

// A few random 28x28 images with labels, as a data set.
Dataset TinyData(int count) {
  Dataset d;
  d.count = count;
  std::mt19937 rng(7);
  d.pixels.resize(static_cast<size_t>(count) * 28 * 28);
  for (auto& p : d.pixels) p = static_cast<uint8_t>(rng() % 256);
  for (int i = 0; i < count; ++i) d.labels.push_back(static_cast<uint8_t>(i % 10));
  return d;
}

// Saves `model`'s parameters, statistics and one stray tensor (an optimizer's) as `steps` steps.
void SaveModel(Model& model, const std::string& path, uint64_t steps) {
  NamedTensors all = model.net.Buffers();
  for (Param* p : model.net.Params()) all.emplace_back(p->name, &p->value);
  Tensor momentum({3});
  all.emplace_back("momentum.extra", &momentum);
  CheckpointInfo ck{model.name, 1, steps, 0, 1, 32, 1.0, {}, {}};
  REQUIRE(SaveCheckpoint(path, ck, all).ok());
}

}  // namespace

TEST_CASE("distillation loss: value by the formula, gradient by finite differences", "[trainer][distill]") {
  const int n = 3, k = 5;
  Tensor z = Random({n, k}, 21);
  for (float& v : z.data) v *= 3;
  const std::vector<uint8_t> y = {4, 0, 2};
  const std::vector<float> q = RandomSoft(n, k, 22);
  for (float t : {1.0f, 4.0f}) {
    for (float a : {0.0f, 0.5f, 0.9f, 1.0f}) {
      Tensor g;
      LossResult r = DistillLoss(z, q.data(), y, t, a, 0.25f, &g);
      double want = 0;
      for (int i = 0; i < n; ++i) want += RowLoss(z.item(i), q.data() + i * k, k, y[i], t, a);
      CHECK(r.loss_sum == Approx(want).epsilon(1e-6));
      std::mt19937 rng(23);
      auto loss = [&] { return DistillLoss(z, q.data(), y, t, a, 1.0f, nullptr).loss_sum * 0.25; };
      CheckPositions("logits", z, g, loss, 1e-2f, rng, 10);
    }
  }
}

TEST_CASE("distillation loss: alpha 0 is cross-entropy; the student's own targets at T cost nothing",
          "[trainer][distill]") {
  const int n = 4, k = 10;
  Tensor z = Random({n, k}, 31);
  const std::vector<uint8_t> y = {1, 9, 3, 3};
  const std::vector<float> q = RandomSoft(n, k, 32);
  Tensor g_ce, g_d;
  const LossResult ce = SoftmaxCrossEntropy(z, y, 0.5f, &g_ce);
  const LossResult d = DistillLoss(z, q.data(), y, 3.0f, 0.0f, 0.5f, &g_d);
  CHECK(d.loss_sum == Approx(ce.loss_sum));
  CHECK(d.correct == ce.correct);
  for (size_t i = 0; i < g_ce.size(); ++i) CHECK(g_d.data[i] == Approx(g_ce.data[i]).margin(1e-6));
  // alpha 1, targets = the student's softmax at T: KL 0, gradient 0.
  std::vector<float> own(static_cast<size_t>(n) * k);
  Softmax(z, own.data(), 3.0f);
  Tensor g;
  const LossResult self = DistillLoss(z, own.data(), y, 3.0f, 1.0f, 1.0f, &g);
  CHECK(self.loss_sum == Approx(0).margin(1e-5));
  for (float v : g.data) CHECK(v == Approx(0).margin(1e-6));
}

TEST_CASE("softmax at a temperature: rows of probabilities, flatter as T grows", "[trainer][distill]") {
  Tensor z({2, 10});
  for (int j = 0; j < 10; ++j) z.data[j] = z.data[10 + j] = static_cast<float>(j);
  std::vector<float> p1(20), p8(20);
  Softmax(z, p1.data(), 1.0f);
  Softmax(z, p8.data(), 8.0f);
  CHECK(std::accumulate(p1.begin(), p1.begin() + 10, 0.0) == Approx(1));
  CHECK(std::accumulate(p8.begin() + 10, p8.end(), 0.0) == Approx(1));
  CHECK(p8[9] < p1[9]);
  CHECK(p8[0] > p1[0]);
  CHECK(p8[9] == Approx(std::exp(9 / 8.0) / [] {
          double s = 0;
          for (int j = 0; j < 10; ++j) s += std::exp(j / 8.0);
          return s;
        }()));
}

TEST_CASE("--teacher's files: a list, a sweep's FILE.K, and what is missing", "[trainer][distill]") {
  const std::string dir = TmpDir();
  auto touch = [](const std::string& p) { std::ofstream(p) << "x"; };
  touch(dir + "/a.ckpt");
  touch(dir + "/b.ckpt");
  for (int k = 0; k < 3; ++k) touch(dir + "/sweep.ckpt." + std::to_string(k));
  auto two = TeacherFiles(dir + "/a.ckpt," + dir + "/b.ckpt");
  REQUIRE(two.ok());
  CHECK(*two == std::vector<std::string>{dir + "/a.ckpt", dir + "/b.ckpt"});
  auto sweep = TeacherFiles(dir + "/sweep.ckpt");
  REQUIRE(sweep.ok());
  CHECK(sweep->size() == 3);
  CHECK(sweep->back() == dir + "/sweep.ckpt.2");
  auto missing = TeacherFiles(dir + "/a.ckpt," + dir + "/nope.ckpt");
  CHECK(missing.status().code() == Code::kNotFound);
  CHECK_THAT(missing.status().message(), Catch::Contains("nope.ckpt: no such checkpoint"));
  CHECK(TeacherFiles(dir + "/a.ckpt,,x").status().code() == Code::kInvalidArgument);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a checkpoint read for its weights: the optimizer's tensors skipped, the model named", "[trainer][distill]") {
  const std::string dir = TmpDir(), path = dir + "/t.ckpt";
  auto a = BuildModel("lenet", 3);
  REQUIRE(a.ok());
  SaveModel(**a, path, 10);
  auto info = PeekCheckpoint(path);
  REQUIRE(info.ok());
  CHECK(info->model == "lenet");
  CHECK(info->steps_done == 10);
  auto b = BuildModel("lenet", 4);
  REQUIRE(b.ok());
  NamedTensors weights;
  for (Param* p : (*b)->net.Params()) weights.emplace_back(p->name, &p->value);
  CheckpointInfo read;
  // Resuming refuses a tensor the run lacks; a teacher's read skips it.
  CHECK_THAT(LoadCheckpoint(path, "lenet", weights, &read).message(), Catch::Contains("momentum.extra"));
  REQUIRE(LoadCheckpoint(path, "lenet", weights, &read, ExtraTensors::kSkip).ok());
  auto pa = (*a)->net.Params(), pb = (*b)->net.Params();
  for (size_t i = 0; i < pa.size(); ++i) CHECK(pa[i]->value.data == pb[i]->value.data);
  std::ofstream(dir + "/junk") << "not a checkpoint";
  CHECK_THAT(PeekCheckpoint(dir + "/junk").status().message(), Catch::Contains("not a hoop checkpoint"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a teacher's soft targets: its forward pass at T, averaged over an ensemble", "[trainer][distill]") {
  const std::string dir = TmpDir();
  auto lenet = BuildModel("lenet", 5), resnet = BuildModel("resnet", 6);
  REQUIRE((lenet.ok() && resnet.ok()));
  SaveModel(**lenet, dir + "/l.ckpt", 5);
  SaveModel(**resnet, dir + "/r.ckpt", 5);
  SaveModel(**lenet, dir + "/untrained.ckpt", 0);
  const Dataset data = TinyData(6);
  ThreadPool pool(1);
  Teacher::Build build = [](const std::string& name) { return BuildModel(name, 99); };
  const int64_t perm[] = {5, 0, 3};
  // The teacher's targets are its own model's softmax(logits / 2) in evaluation mode.
  auto want = [&](Model& m) {
    Workspace ws;
    Gather(data, perm, 3, ws.batch, ws.labels, 0);
    std::vector<float> p(30);
    Softmax(m.net.Forward(ws.batch, Mode::kEval, pool), p.data(), 2.0f);
    return p;
  };
  const std::vector<float> pl = want(**lenet), pr = want(**resnet);
  auto one = Teacher::Load({dir + "/l.ckpt"}, build, data, 2.0f);
  REQUIRE(one.ok());
  const float* t = (*one)->Targets(data, perm, 3, pool);
  for (int i = 0; i < 30; ++i) CHECK(t[i] == Approx(pl[i]).margin(1e-6));
  CHECK_THAT((*one)->Describe(), Catch::Contains("lenet from"));
  // Kept by image: the same targets again without a forward pass, in the order asked.
  const int64_t again[] = {3, 5};
  const double spent = (*one)->Seconds();
  t = (*one)->Targets(data, again, 2, pool);
  for (int j = 0; j < 10; ++j) CHECK((t[j] == pl[20 + j] && t[10 + j] == pl[j]));
  CHECK((*one)->Seconds() - spent < 0.01);
  auto both = Teacher::Load({dir + "/l.ckpt", dir + "/r.ckpt"}, build, data, 2.0f);
  REQUIRE(both.ok());
  t = (*both)->Targets(data, perm, 3, pool);
  for (int i = 0; i < 30; ++i) CHECK(t[i] == Approx((pl[i] + pr[i]) / 2).margin(1e-6));
  CHECK((*both)->Describe() == "an ensemble of 2 (lenet, resnet)");
  auto raw = Teacher::Load({dir + "/untrained.ckpt"}, build, data, 2.0f);
  CHECK_THAT(raw.status().message(), Catch::Contains("untrained teacher"));
  std::filesystem::remove_all(dir);
}
