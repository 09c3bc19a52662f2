// hoop-train --elastic under elastic hooprun (trainer/elastic_run.cc): a rank killed mid-epoch
// (--kill-rank), the survivors going on with its share of every global batch, and its replacement
// admitted; against an undisturbed run of the same seed and global batch, the same training: every
// epoch's test accuracy within 0.5 points, the parameters apart by rounding alone, so no step was
// applied twice or skipped. The metrics say which steps ran on how many ranks.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "tests/launch/train_support.h"

using namespace hoop::test;

namespace {
// Each epoch's test accuracy, from rank 0's epoch lines.
std::vector<double> Accuracies(const std::string& out) {
  std::vector<double> acc;
  static const std::regex line("epoch \\d+/\\d+: train loss \\S+ acc \\S+% \\| test loss \\S+ acc (\\S+)%");
  for (std::sregex_iterator it(out.begin(), out.end(), line), end; it != end; ++it)
    acc.push_back(std::stod((*it)[1].str()));
  return acc;
}
}  // namespace

TEST_CASE("hoop-train --elastic through a lost rank and its replacement trains as an undisturbed run", "[train]") {
  // The whole test set (10000 images): on 1000, which images near the boundary flip with the order
  // of the sums alone moved the accuracy up to 0.8 points (85.1% undisturbed, 85.9% elastic, the
  // parameters no further apart than 2 ranks alone make them); on 10000, 84.79% against 84.81 to
  // 84.93%.
  const std::vector<std::string> common = {"--model",      "lenet", "--epochs", "3", "--train-limit",   "9000",
                                           "--test-limit", "10000", "--seed",   "3", "--warmup-epochs", "0",
                                           "--threads",    "1"};
  const std::string plain_ck = Tmp("elastic-plain"), two_ck = Tmp("elastic-two"), elastic_ck = Tmp("elastic"),
                    metrics = Tmp("elastic.json");
  auto plain_args = common, two_args = common;
  plain_args.insert(plain_args.end(), {"--batch", "32", "--lr", "0.01", "--checkpoint", plain_ck});
  // The same global batch and rate on 2 ranks: how far the order of the sums alone moves the run.
  two_args.insert(two_args.end(), {"--batch", "48", "--lr", "0.015", "--checkpoint", two_ck});
  auto plain = Train(3, plain_args, 180), two = Train(2, two_args, 180);
  INFO(plain.output << two.output);
  REQUIRE(plain.exit_code == 0);
  REQUIRE(two.exit_code == 0);

  std::vector<std::string> argv = {Bin("hooprun"), "-np", "3", "--min-np", "2", "--max-np", "3", Bin("hoop-train")};
  argv.insert(argv.end(), common.begin(), common.end());
  // Rank 0 sleeps 30 ms a step (timing only, not the arithmetic): the run after the loss lasts
  // about 8 s longer, time for the newcomer to start and be admitted on a loaded machine (in CI
  // runs beside other tests it twice was not: with the job done 2 s after the loss, and with
  // 10 ms a step, 5 s after it).
  argv.insert(argv.end(), {"--batch", "32", "--lr", "0.01", "--elastic", "--kill-rank", "1", "--kill-step", "10",
                           "--slow-rank", "0", "--slow-ms", "30", "--checkpoint", elastic_ck, "--metrics", metrics});
  auto r = RunProc(argv, Within(180));
  INFO(r.output);
  CHECK(r.exit_code == 0);  // the job survived its loss
  CHECK(r.output.find("hoop-train: --kill-rank 1: killing this process after step 10") != std::string::npos);
  CHECK(r.output.find("hoop-train: a rank was lost (") != std::string::npos);
  CHECK(r.output.find(") before step 11: 2 rank(s) now (were 3), 48 image(s) each of the global batch of 96; ") !=
        std::string::npos);
  CHECK(r.output.find("hooprun: started rank 3 (pid ") != std::string::npos);
  CHECK(r.output.find("hoop-train: 1 newcomer(s) admitted before step ") != std::string::npos);
  CHECK(r.output.find(": 3 rank(s) now (were 2), 32 image(s) each of the global batch of 96; ") != std::string::npos);
  CHECK(std::regex_search(r.output, std::regex("global batch of 96; \\d+\\.\\d{3} s to go on")));
  CHECK(r.output.find("| ranks: 3 from step 1, 2 from step 11") != std::string::npos);

  // The same training. Not to the bit: steps on 2 ranks sum their batch in another order than on
  // 3, and SGD carries such differences on. The final accuracy within 0.5 points (the goal), every
  // epoch's within 1.5, the same steps, and the parameters no further from the undisturbed run's
  // than twice what 2 ranks alone make of it (a step applied twice or skipped, or another batch's
  // images, would move them far more).
  const auto a = Accuracies(plain.output), b = Accuracies(r.output);
  REQUIRE(a.size() == 3);
  REQUIRE(b.size() == 3);
  for (size_t e = 0; e < a.size(); ++e) CHECK(std::abs(a[e] - b[e]) <= (e + 1 == a.size() ? 0.5 : 1.5));
  Loaded one = Load(plain_ck, "lenet"), on_two = Load(two_ck, "lenet"), elastic = Load(elastic_ck, "lenet");
  CHECK(elastic.info.steps_done == one.info.steps_done);
  const double apart = RelDiff(one, elastic), baseline = RelDiff(one, on_two);
  INFO("parameters apart by " << apart << "; 2 ranks alone: " << baseline);
  CHECK(apart <= 2 * baseline + 0.01);
  WARN("hoop-train --elastic against undisturbed: test accuracy "
       << a.back() << "% / " << b.back() << "%, parameters apart by " << apart << " (2 ranks alone: " << baseline
       << ")");

  // Epoch 1's steps by ranks in the metrics: 3 from step 1, 2 from step 11, and 3 again later.
  std::ifstream f(metrics);
  std::stringstream text;
  text << f.rdbuf();
  auto json = nlohmann::json::parse(text.str(), nullptr, false);
  REQUIRE_FALSE(json.is_discarded());
  const auto first = json["epochs"][0]["ranks_by_step"];
  REQUIRE(first.size() >= 4);
  CHECK(first[0] == 1);
  CHECK(first[1] == 3);
  CHECK(first[2] == 11);
  CHECK(first[3] == 2);
  for (const std::string& p : {plain_ck, two_ck, elastic_ck, metrics}) std::remove(p.c_str());
}

TEST_CASE("hoop-train --elastic refuses what it cannot go on with", "[train]") {
  for (const auto& extra :
       std::vector<std::vector<std::string>>{{"--strategy", "hogwild"}, {"--backup-workers", "1"}}) {
    std::vector<std::string> args = {"--model", "lenet", "--elastic"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = Train(1, args, 60);
    INFO(r.output);
    CHECK(r.exit_code != 0);
    CHECK(r.output.find("--elastic trains with --strategy sync") != std::string::npos);
  }
  auto half = Train(1, {"--model", "lenet", "--kill-rank", "0"}, 60);
  CHECK(half.output.find("--kill-rank and --kill-step go together") != std::string::npos);
}
