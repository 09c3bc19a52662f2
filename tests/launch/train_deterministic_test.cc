// hoop-train --deterministic (issue 53): the same checkpoint bytes and the same training metrics
// (loss, accuracy, learning rate, images) whatever the back end, the algorithm named, the chunk
// size and the fusion setting, for a rank count and seed; a mid-epoch checkpoint too (its
// partial sums). Strategies whose updates follow timing are refused with it.
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "tests/launch/train_support.h"

using namespace hoop::test;

namespace {

std::string Bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The metrics CSV's training columns (times and energy are measurements: they differ run to run).
std::string TrainingColumns(const std::string& path) {
  std::ifstream f(path);
  std::string header, line, out;
  std::getline(f, header);
  std::vector<std::string> names;
  std::stringstream h(header);
  for (std::string n; std::getline(h, n, ',');) names.push_back(n);
  const std::set<std::string> keep = {"model",      "ranks",     "batch",     "epoch",    "images",
                                      "train_loss", "train_acc", "test_loss", "test_acc", "lr"};
  while (std::getline(f, line)) {
    std::stringstream l(line);
    size_t k = 0;
    for (std::string v; std::getline(l, v, ','); ++k)
      if (k < names.size() && keep.count(names[k])) out += names[k] + "=" + v + " ";
    out += "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("hoop-train --deterministic: the same checkpoint bytes and metrics over back ends, algorithms, fusion",
          "[train][deterministic]") {
  const std::vector<std::map<std::string, std::string>> runs = {
      {{"HOOP_TRANSPORT", "tcp"}},
      {{"HOOP_TRANSPORT", "shm"}, {"HOOP_ALGO", "tree"}, {"HOOP_FUSION_THRESHOLD", "0"}, {"HOOP_CHUNK_BYTES", "4K"}},
      {{"HOOP_TRANSPORT", "shm"}, {"HOOP_ALGO", "ring"}, {"HOOP_FUSION_THRESHOLD", "64K"}, {"HOOP_WINDOW", "2"}},
  };
  std::string first_ck, first_mid, first_metrics;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string ck = Tmp("det-" + std::to_string(i)), metrics = ck + ".csv", mid = ck + ".mid";
    ProcOptions o = Within(180);
    o.env = runs[i];
    const auto train = [&](const std::vector<std::string>& extra) {
      std::vector<std::string> argv = {Bin("hooprun"),
                                       "-np",
                                       "3",
                                       "--oversubscribe",
                                       Bin("hoop-train"),
                                       "--deterministic",
                                       "--train-limit",
                                       "960",
                                       "--test-limit",
                                       "200",
                                       "--progress",
                                       "0"};
      argv.insert(argv.end(), extra.begin(), extra.end());
      return RunProc(argv, o);
    };
    auto r = train({"--epochs", "2", "--checkpoint", ck, "--metrics", metrics});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    // A checkpoint taken mid-epoch: written at step 13 (3 steps into the second epoch, its partial
    // sums in it), the job then stopped at step 14 by the failure drill.
    auto m = train(
        {"--epochs", "2", "--checkpoint-every", "13", "--checkpoint", mid, "--kill-rank", "0", "--kill-step", "14"});
    INFO(m.output);
    REQUIRE(m.exit_code != 0);
    if (i == 0) {
      first_ck = Bytes(ck), first_mid = Bytes(mid), first_metrics = TrainingColumns(metrics);
      CHECK(first_ck.size() > 100000);  // the parameters are in it
    } else {
      INFO("run " << i);
      CHECK(Bytes(ck) == first_ck);
      CHECK(Bytes(mid) == first_mid);
      CHECK(TrainingColumns(metrics) == first_metrics);
    }
    for (const std::string& p : {ck, metrics, mid}) std::remove(p.c_str());
  }
  CHECK(first_metrics.find("epoch=2") != std::string::npos);
  for (const char* strategy : {"hogwild", "ps"}) {
    auto bad = Train(1, {"--deterministic", "--strategy", strategy}, 30);
    CHECK(bad.exit_code == 2);
    CHECK(bad.output.find("--deterministic trains with --strategy sync, pipeline or distill") != std::string::npos);
  }
  auto backup = Train(2, {"--deterministic", "--backup-workers", "1"}, 30);
  CHECK(backup.output.find("--deterministic: --backup-workers drops whichever ranks are slow") != std::string::npos);
}

TEST_CASE("hoop-train --deterministic --strategy distill: the same checkpoint bytes over back ends and algorithms",
          "[train][deterministic]") {
  const std::string teacher = Tmp("det-teacher");
  auto t = Train(1, {"--model", "resnet", "--epochs", "1", "--train-limit", "320", "--test-limit", "50", "--progress",
                     "0", "--checkpoint", teacher});
  INFO(t.output);
  REQUIRE(t.exit_code == 0);
  std::string first;
  int i = 0;
  for (const std::map<std::string, std::string>& env :
       {std::map<std::string, std::string>{{"HOOP_TRANSPORT", "tcp"}},
        std::map<std::string, std::string>{{"HOOP_TRANSPORT", "shm"}, {"HOOP_ALGO", "tree"}}}) {
    const std::string ck = Tmp("det-distill-" + std::to_string(i++));
    ProcOptions o = Within(120);
    o.env = env;
    auto r = RunProc({Bin("hooprun"),
                      "-np",
                      "3",
                      "--oversubscribe",
                      Bin("hoop-train"),
                      "--deterministic",
                      "--strategy",
                      "distill",
                      "--teacher",
                      teacher,
                      "--train-limit",
                      "480",
                      "--test-limit",
                      "100",
                      "--epochs",
                      "1",
                      "--progress",
                      "0",
                      "--checkpoint",
                      ck},
                     o);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    if (first.empty())
      first = Bytes(ck);
    else
      CHECK(Bytes(ck) == first);
    std::remove(ck.c_str());
  }
  CHECK(first.size() > 100000);
  std::remove(teacher.c_str());
}
