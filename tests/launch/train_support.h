// Helpers of the hoop-train launch tests (train_launch_test.cc, train_strategies_test.cc): a
// hooprun job of hoop-train, scratch paths, and a checkpoint read back to compare parameters.
#pragma once
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/support/proc.h"
#include "trainer/checkpoint.h"
#include "trainer/model.h"
#include "trainer/sgd.h"

namespace hoop::test {

using train::BuildModel;
using train::CheckpointInfo;
using train::LoadCheckpoint;
using train::Model;
using train::NamedTensors;
using train::Param;
using train::Sgd;

// This test process's own folder under /tmp, removed with all in it when the process exits: also
// after a failed REQUIRE, which ends the test case before its own clean-up. (Not by a forked
// child: only the process that made it removes it.)
class ScratchDir {
 public:
  ScratchDir() : owner_(::getpid()), path_("/tmp/hoop-train-test-" + std::to_string(owner_)) {
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    if (::getpid() == owner_) std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  pid_t owner_;
  std::string path_;
};

// A scratch path for `tag` in the process's ScratchDir.
inline std::string Tmp(const std::string& tag) {
  static ScratchDir dir;
  return dir.path() + "/" + tag;
}

// Everything a checkpoint holds, in the trainer's order, filled from `path`.
struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<Sgd> sgd;
  NamedTensors state;
  size_t model_values = 0;  // state's first entries: the parameters and buffers (then SGD's)
  CheckpointInfo info;
};

inline Loaded Load(const std::string& path, const std::string& model) {
  Loaded l;
  l.model = std::move(BuildModel(model, 99)).value();
  l.sgd = std::make_unique<Sgd>(l.model->net.Params(), 0.9, 0);
  for (Param* p : l.model->net.Params()) l.state.emplace_back(p->name, &p->value);
  for (auto& b : l.model->net.Buffers()) l.state.push_back(b);
  l.model_values = l.state.size();
  for (auto& s : l.sgd->State()) l.state.push_back(s);
  auto s = LoadCheckpoint(path, model, l.state, &l.info);
  INFO(s.message());
  REQUIRE(s.ok());
  return l;
}

// The largest |a - b| over every value of every tensor.
inline double MaxDiff(const Loaded& a, const Loaded& b) {
  double worst = 0;
  for (size_t i = 0; i < a.state.size(); ++i)
    for (size_t j = 0; j < a.state[i].second->size(); ++j)
      worst = std::max(worst, static_cast<double>(std::abs(a.state[i].second->data[j] - b.state[i].second->data[j])));
  return worst;
}

// The largest |a - b| of any parameter or buffer over the largest |a| of its tensor: how far apart
// two runs' models are, relative to the size of what they hold. (Not the momentum buffers: they
// hold the last steps' gradients, sums over the batch of terms that largely cancel, whose
// relative rounding is not bounded by the parameters'. A wrong momentum shows in the parameters
// of the steps after it.) `where` (may be null) names the farthest tensor.
inline double RelDiff(const Loaded& a, const Loaded& b, std::string* where = nullptr) {
  double worst = 0;
  for (size_t i = 0; i < a.model_values; ++i) {
    double scale = 0, diff = 0;
    for (size_t j = 0; j < a.state[i].second->size(); ++j) {
      scale = std::max(scale, static_cast<double>(std::abs(a.state[i].second->data[j])));
      diff = std::max(diff, static_cast<double>(std::abs(a.state[i].second->data[j] - b.state[i].second->data[j])));
    }
    if (scale > 0 && diff / scale > worst) {
      worst = diff / scale;
      if (where) *where = a.state[i].first + " (" + std::to_string(diff) + " of " + std::to_string(scale) + ")";
    }
  }
  return worst;
}

// How far apart (RelDiff) two runs of the same SGD training may end when they sum the same
// float32 terms in other orders: micro-batches against whole batches, another rank count's
// reduction, another instruction set's kernels (oneDNN, OpenBLAS and hoop's each choose code per
// CPU, and the orders differ with the vector width). Derived, not tuned on one CPU:
//  - a sum of n terms is off by about sqrt(n) roundings of u = 2^-24 (float32's unit roundoff)
//    of its magnitude when the errors add like a random walk; the longest sums in a step are the
//    widest layer's dot products and the batch's, n <= 1024 here, so sqrt(n) <= 32;
//  - each step's difference stays in the parameters and, through momentum 0.9, in the next
//    1 / (1 - 0.9) = 10 steps' updates;
//  - over `steps` steps those add up; a factor 2 for what the loss's curvature makes of a
//    difference in the steps after it.
// Measured on a Xeon with AVX-512, 20 steps of LeNet (bound 7.6e-4): pipeline 2x2 against sync
// on 2 ranks 7.1e-7 with every kernel at its best, 1.4e-4 with OpenBLAS forced to its Haswell
// kernels, 2.2e-5 for 3 stages with oneDNN held to AVX2. A real bug (a micro-batch lost, a
// gradient not averaged, another seed) moves the parameters by percents: far past this.
inline double SgdRoundingBound(int steps) { return 2.0 * 32 * 10 * std::ldexp(1.0, -24) * steps; }

inline ProcResult Train(int np, std::vector<std::string> args, double seconds = 120) {
  std::vector<std::string> argv = {Bin("hooprun"), "-np", std::to_string(np), Bin("hoop-train")};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProc(argv, Within(seconds));
}

// A 2-rank run of `args` stopped by Ctrl-C to hooprun `after` seconds in (hooprun sends SIGTERM to
// the ranks): they agree on a step, rank 0 writes the checkpoint `broken` there, the job ends 130.
inline void Interrupt(const std::vector<std::string>& args, const std::string& broken, double after) {
  std::vector<std::string> argv = {Bin("hooprun"), "-np", "2", Bin("hoop-train")};
  argv.insert(argv.end(), args.begin(), args.end());
  auto b = RunProc(argv, SignalAfter(SIGINT, after, 120));
  INFO(b.output);
  CHECK(b.exit_code == 130);
  REQUIRE(b.output.find("[0] hoop-train: interrupted by Interrupt at epoch ") != std::string::npos);
  CHECK(b.output.find("checkpoint written to " + broken + ", --resume continues from there") != std::string::npos);
}

// The interrupted run, resumed with --resume (`args` as it was), ends where the unbroken run did
// (checkpoint `straight`): the same steps and, the same computation resumed from every bit, the
// same parameters exactly.
inline void ResumeMatches(std::vector<std::string> args, const std::string& straight, const std::string& broken) {
  args.push_back("--resume");
  auto c = Train(2, args);
  INFO(c.output);
  REQUIRE(c.exit_code == 0);
  CHECK(c.output.find(", resuming ") != std::string::npos);
  Loaded x = Load(straight, "lenet"), y = Load(broken, "lenet");
  CHECK(y.info.epochs_done == 2);
  CHECK(x.info.steps_done == y.info.steps_done);
  CHECK(MaxDiff(x, y) == 0);
}

}  // namespace hoop::test
