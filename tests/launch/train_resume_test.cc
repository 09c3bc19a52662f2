// hoop-train stopped and started again, as preemptible jobs are: real hooprun jobs on
// Fashion-MNIST whose resumed run must end where an unbroken run does.
//  - a run stopped after an epoch and resumed from its checkpoint;
//  - a run interrupted (SIGINT, SIGTERM) mid-epoch, which checkpoints where it is;
//  - --checkpoint-every, and a SIGKILLed run resumed from the last checkpoint it wrote;
//  - a preemption loop (--resume before any checkpoint exists starts afresh, and says so).
// The other runs of the trainer: train_launch_test.cc.
#include <catch2/catch.hpp>

#include <signal.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/launch/train_support.h"
#include "tests/support/proc.h"

using namespace hoop::test;
using namespace hoop::train;

TEST_CASE("a run resumed from its checkpoint ends where an unbroken run does", "[train]") {
  // A constant rate after warm-up: the cosine's length depends on --epochs, which differs here
  // between the first part of the broken run and the unbroken one.
  const std::vector<std::string> common = {"--model", "resnet", "--train-limit", "256", "--test-limit", "64",
                                           "--batch", "16",     "--threads",     "1",   "--schedule",   "constant"};
  std::string straight = Tmp("straight"), broken = Tmp("broken"), metrics = Tmp("m.json");
  auto args = common;
  args.insert(args.end(), {"--epochs", "2", "--checkpoint", straight});
  auto a = Train(2, args);
  INFO(a.output);
  REQUIRE(a.exit_code == 0);
  args = common;
  args.insert(args.end(), {"--epochs", "1", "--checkpoint", broken});
  auto b = Train(2, args);
  INFO(b.output);
  REQUIRE(b.exit_code == 0);
  CHECK(Load(broken, "resnet").info.epochs_done == 1);
  args = common;
  args.insert(args.end(), {"--epochs", "2", "--checkpoint", broken, "--resume", "--metrics", metrics});
  auto c = Train(2, args);
  INFO(c.output);
  REQUIRE(c.exit_code == 0);
  CHECK(c.output.find("resuming after epoch 1") != std::string::npos);
  CHECK(c.output.find("epoch 2/2:") != std::string::npos);
  CHECK(c.output.find("epoch 1/2:") == std::string::npos);
  Loaded x = Load(straight, "resnet"), y = Load(broken, "resnet");
  CHECK(y.info.epochs_done == 2);
  CHECK(x.info.steps_done == y.info.steps_done);
  // The same computation in the same order, from a checkpoint that holds every bit: exact.
  CHECK(MaxDiff(x, y) == 0);
  std::ifstream in(metrics);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str().find("\"epoch\": 2") != std::string::npos);
  CHECK(ss.str().find("\"comm_wait_s\": ") != std::string::npos);
  for (auto& f : {straight, broken, metrics}) std::remove(f.c_str());
  // A checkpoint of another model is refused by rank 0, and every rank says why it stops.
  std::string other = Tmp("lenet-ck");
  auto d = Train(
      1, {"--model", "lenet", "--train-limit", "64", "--test-limit", "10", "--epochs", "1", "--checkpoint", other});
  REQUIRE(d.exit_code == 0);
  auto e = Train(2, {"--model", "resnet", "--epochs", "2", "--checkpoint", other, "--resume"});
  INFO(e.output);
  CHECK(e.exit_code == 1);
  CHECK(e.output.find("holds model 'lenet', but this run trains 'resnet'") != std::string::npos);
  CHECK(e.output.find("rank 1: rank 0 could not resume from " + other) != std::string::npos);
  std::remove(other.c_str());
}

TEST_CASE("an interrupted run checkpoints mid-epoch and --resume ends where an unbroken run does", "[train]") {
  const std::vector<std::string> common = {"--model",  "lenet", "--train-limit", "30000", "--test-limit", "500",
                                           "--epochs", "2",     "--threads",     "1",     "--progress",   "1"};
  const std::string straight = Tmp("i-straight"), broken = Tmp("i-broken"), m1 = Tmp("i-m1.csv"), m2 = Tmp("i-m2.csv");
  auto args = common;
  args.insert(args.end(), {"--checkpoint", straight, "--metrics", m1});
  auto a = Train(2, args);
  INFO(a.output);
  REQUIRE(a.exit_code == 0);
  // Progress lines within the epoch (not a terminal: one every --progress seconds).
  CHECK(a.output.find("[0] epoch 1/2: step ") != std::string::npos);
  CHECK(a.output.find(" images/s, ") != std::string::npos);
  CHECK(a.output.find(" s left in the epoch") != std::string::npos);
  // Ctrl-C 3.5 s in: rank 0 checkpoints where the ranks agree to stop, mid-epoch.
  args = common;
  args.insert(args.end(), {"--checkpoint", broken, "--metrics", m2});
  Interrupt(args, broken, 3.5);
  Loaded mid = Load(broken, "lenet");
  CHECK(mid.info.ranks == 2);
  CHECK(mid.info.wall_s > 0);
  ResumeMatches(args, straight, broken);
  args.push_back("--resume");
  // The metrics file keeps the epochs before the interruption, and the clock goes on.
  std::ifstream f1(m1), f2(m2);
  std::string l1, l2;
  int rows = 0;
  while (std::getline(f2, l2)) ++rows;
  CHECK(rows == 3);                         // the header and both epochs
  auto acc = [](const std::string& path) {  // the last row's test_acc
    std::ifstream f(path);
    std::string line, last;
    while (std::getline(f, line)) last = line;
    std::vector<std::string> cells;
    std::istringstream ls(last);
    for (std::string c; std::getline(ls, c, ',');) cells.push_back(c);
    return cells.size() > 18 ? std::stod(cells[18]) : -1.0;
  };
  CHECK(std::abs(acc(m1) - acc(m2)) < 0.005);
  // Resuming past --epochs says so and does nothing; another rank count needs --force.
  auto done = Train(2, args);
  CHECK(done.exit_code == 0);
  CHECK(done.output.find("holds 2 finished epoch(s), --epochs is 2: nothing left to train") != std::string::npos);
  auto other = Train(1, {"--model", "lenet", "--epochs", "3", "--checkpoint", broken, "--resume", "--progress", "0",
                         "--train-limit", "640", "--test-limit", "10"});
  INFO(other.output);
  CHECK(other.exit_code == 1);
  CHECK(
      other.output.find("was written by a 2-rank run; this one has 1 ranks: the learning rate (--lr x ranks) would be "
                        "0.025 instead of 0.05, the global batch 32 instead of 64; add --force") != std::string::npos);
  auto forced = Train(1, {"--model", "lenet", "--epochs", "3", "--checkpoint", broken, "--resume", "--force",
                          "--progress", "0", "--train-limit", "640", "--test-limit", "10"});
  INFO(forced.output);
  CHECK(forced.exit_code == 0);
  CHECK(forced.output.find("epoch 3/3:") != std::string::npos);
  for (auto& f : {straight, broken, m1, m2}) std::remove(f.c_str());
}

TEST_CASE("--checkpoint-every saves mid-epoch; a SIGKILLed run resumes from the last one", "[train]") {
  const std::string ck = Tmp("every");
  // The hand-written layers and all 60000 images: the first epoch outlasts the 4 s before the kill.
  std::vector<std::string> argv = {Bin("hooprun"),
                                   "-np",
                                   "2",
                                   Bin("hoop-train"),
                                   "--layers",
                                   "native",
                                   "--epochs",
                                   "1",
                                   "--checkpoint",
                                   ck,
                                   "--checkpoint-every",
                                   "40",
                                   "--progress",
                                   "0"};
  auto r = RunProc(argv, SignalAfter(SIGKILL, 4.0, 60));
  CHECK(r.signal == SIGKILL);
  Loaded l = Load(ck, "lenet");
  CHECK(l.info.step_in_epoch > 0);
  CHECK(l.info.step_in_epoch % 40 == 0);
  CHECK(l.info.steps_done == l.info.step_in_epoch);
  std::remove(ck.c_str());
}

TEST_CASE("a preemption loop is one command: --resume with no checkpoint yet starts afresh, and says so", "[train]") {
  const std::string ck = Tmp("loop");
  std::remove(ck.c_str());
  const std::vector<std::string> args = {"--model",      "lenet", "--epochs",   "1", "--train-limit", "64",
                                         "--test-limit", "32",    "--progress", "0", "--threads",     "1",
                                         "--checkpoint", ck};
  auto with_resume = args;
  with_resume.push_back("--resume");
  // For every strategy that resumes: sync (2 ranks), a parameter server and a pipeline.
  const std::vector<std::pair<int, std::vector<std::string>>> runs = {
      {2, {}}, {3, {"--strategy", "ps"}}, {2, {"--strategy", "pipeline", "--stages", "2"}}};
  for (const auto& [np, extra] : runs) {
    std::remove(ck.c_str());
    auto a = with_resume;
    a.insert(a.end(), extra.begin(), extra.end());
    auto first = Train(np, a, 90);
    INFO(first.output);
    CHECK(first.exit_code == 0);
    CHECK(first.output.find("hoop-train: --resume: no checkpoint at " + ck + " yet; training from the start") !=
          std::string::npos);
    CHECK(first.output.find("resuming") == std::string::npos);
    CHECK(Load(ck, "lenet").info.epochs_done == 1);
  }
  // The same command twice (sync): the second resumes (nothing left here), no fresh start.
  std::remove(ck.c_str());
  REQUIRE(Train(2, with_resume, 90).exit_code == 0);
  auto again = Train(2, with_resume, 90);
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK(again.output.find("no checkpoint at") == std::string::npos);
  // Without --resume an existing checkpoint is overwritten, and said so.
  auto over = Train(2, args, 90);
  INFO(over.output);
  CHECK(over.exit_code == 0);
  CHECK(over.output.find("hoop-train: --checkpoint " + ck + " exists; this run starts afresh and overwrites it") !=
        std::string::npos);
  std::remove(ck.c_str());
}
