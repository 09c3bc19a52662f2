// Helpers of the hoop-train launch tests (train_launch_test.cc, train_strategies_test.cc): a
// hooprun job of hoop-train, scratch paths, and a checkpoint read back to compare parameters.
#pragma once
#include <unistd.h>

#include <algorithm>
#include <cmath>
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

inline std::string Tmp(const std::string& tag) { return "/tmp/hoop-train-test-" + std::to_string(::getpid()) + "-" + tag; }

// Everything a checkpoint holds, in the trainer's order, filled from `path`.
struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<Sgd> sgd;
  NamedTensors state;
  CheckpointInfo info;
};

inline Loaded Load(const std::string& path, const std::string& model) {
  Loaded l;
  l.model = std::move(BuildModel(model, 99)).value();
  l.sgd = std::make_unique<Sgd>(l.model->net.Params(), 0.9, 0);
  for (Param* p : l.model->net.Params()) l.state.emplace_back(p->name, &p->value);
  for (auto& b : l.model->net.Buffers()) l.state.push_back(b);
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

inline ProcResult Train(int np, std::vector<std::string> args, double seconds = 120) {
  std::vector<std::string> argv = {Bin("hooprun"), "-np", std::to_string(np), Bin("hoop-train")};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProc(argv, Within(seconds));
}


}  // namespace hoop::test
