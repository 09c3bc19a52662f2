// hoop-train's strategies beside sync, as users run them under hooprun (issue 24): hogwild,
// parameter servers (killed workers and servers included), pipelines (equivalence with one rank,
// a killed stage, Ctrl-C and resume), backup workers, sweeps, distillation, and perf/strategies.
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/launch/train_support.h"
#include "tests/support/proc.h"

using namespace hoop::test;
using namespace hoop::train;

TEST_CASE("--strategy hogwild: one rank is sync SGD; two ranks share one model and learn", "[train]") {
  const std::vector<std::string> common = {"--epochs",   "1", "--train-limit", "640", "--test-limit", "200",
                                           "--progress", "0", "--threads",     "1"};
  auto run = [&](int np, const std::string& strategy, const std::string& ck) {
    auto args = common;
    args.insert(args.end(), {"--strategy", strategy, "--checkpoint", ck});
    return Train(np, args);
  };
  // Alone, a rank's step goes through the shared copy and back: the same training as sync, but
  // for rounding in adding each step's change to the shared copy.
  const std::string a = Tmp("hw-sync"), b = Tmp("hw-one");
  auto r1 = run(1, "sync", a), r2 = run(1, "hogwild", b);
  INFO(r1.output << r2.output);
  REQUIRE((r1.exit_code == 0 && r2.exit_code == 0));
  CHECK(RelDiff(Load(a, "lenet"), Load(b, "lenet")) < SgdRoundingBound(20));  // 20 steps of 32
  // Two ranks, each on its own batches, updating one model without locks: it learns.
  auto two = Train(
      2, {"--strategy", "hogwild", "--epochs", "2", "--train-limit", "4000", "--test-limit", "500", "--progress", "0"});
  INFO(two.output);
  REQUIRE(two.exit_code == 0);
  const size_t at = two.output.find("epoch 2/2:");
  REQUIRE(at != std::string::npos);
  double acc = 0;
  CHECK(std::sscanf(two.output.c_str() + two.output.find("test loss", at), "test loss %*f acc %lf", &acc) == 1);
  CHECK(acc > 65);
  // Nothing stays behind in /dev/shm.
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm"))
    CHECK(e.path().filename().string().rfind("hoop-hogwild-", 0) != 0);
  auto bad = Train(1, {"--strategy", "async"}, 30);
  CHECK(bad.output.find("--strategy 'async': expected sync, hogwild, ps, pipeline or distill") != std::string::npos);
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST_CASE("--strategy ps: staleness 0 is sync SGD; asynchronous workers learn; bad splits are refused", "[train]") {
  // 1 server and 2 workers summing each step's gradients: the updates of sync on 2 ranks.
  // 320 images: 10 steps of 32. Micro-batches run oneDNN's kernels for another batch size, whose
  // rounding differs; over 20 steps that can flip a ReLU's or a max-pool's choice and grow from
  // there (seen: 3% apart at step 20 with oneDNN held to SSE4.1 on an AMD EPYC, while both
  // schedules matched one rank to 1e-6 over 5 and 10 steps for 8 seeds at SSE4.1, AVX2 and the
  // machine's own ISA), which would be no error of the pipeline's.
  const std::vector<std::string> small = {"--epochs",   "1", "--train-limit", "320", "--test-limit", "100",
                                          "--progress", "0", "--threads",     "1"};
  const std::string a = Tmp("ps-sync"), b = Tmp("ps-s0");
  auto args = small;
  args.insert(args.end(), {"--checkpoint", a});
  auto sync = Train(2, args);
  args = small;
  args.insert(args.end(), {"--strategy", "ps", "--staleness", "0", "--checkpoint", b});
  auto ps = Train(3, args);
  INFO(sync.output << ps.output);
  REQUIRE((sync.exit_code == 0 && ps.exit_code == 0));
  CHECK(RelDiff(Load(a, "lenet"), Load(b, "lenet")) < SgdRoundingBound(20));  // 20 steps of 32
  CHECK(ps.output.find("parameter servers: 1 server(s) (rank 0 holds 120382 of them), 2 worker(s) x batch 32, "
                       "staleness 0") != std::string::npos);
  // 2 servers (each a shard) and 2 workers that never wait for each other: it learns.
  auto async = Train(4, {"--strategy", "ps", "--servers", "2", "--epochs", "2", "--train-limit", "4000", "--test-limit",
                         "500", "--progress", "0", "--threads", "1"});
  INFO(async.output);
  REQUIRE(async.exit_code == 0);
  CHECK(async.output.find("2 server(s) (rank 0 holds 96000 of them), 2 worker(s) x batch 32, staleness unbounded") !=
        std::string::npos);
  const size_t at = async.output.find("epoch 2/2:");
  REQUIRE(at != std::string::npos);
  double acc = 0;
  CHECK(std::sscanf(async.output.c_str() + async.output.find("test loss", at), "test loss %*f acc %lf", &acc) == 1);
  CHECK(acc > 65);
  CHECK(async.output.find("2 of 2 worker(s) reported") != std::string::npos);
  // Server 0 deals the epoch's batches as the workers ask: every image once, whoever took it.
  long n0 = 0, n1 = 0;
  CHECK(std::sscanf(async.output.c_str() + async.output.find("images per worker ", at), "images per worker %ld/%ld",
                    &n0, &n1) == 2);
  CHECK(n0 + n1 == 4000);
  // Refused, each with its reason.
  auto no_worker = Train(2, {"--strategy", "ps", "--servers", "2", "--train-limit", "64"}, 30);
  CHECK(no_worker.output.find("--servers 2: the job's 2 rank(s) leave no worker") != std::string::npos);
  auto not_ps = Train(1, {"--servers", "1"}, 30);
  CHECK(not_ps.output.find("--servers is for --strategy ps") != std::string::npos);
  auto slow_server = Train(2, {"--strategy", "ps", "--slow-rank", "0", "--slow-ms", "5", "--train-limit", "64"}, 30);
  CHECK(slow_server.output.find("--slow-rank 0: the workers are ranks 1 to 1") != std::string::npos);
  for (auto& f : {a, b}) std::remove(f.c_str());
}

TEST_CASE("--strategy ps: a killed worker is left out and the job goes on; a killed server ends it", "[train]") {
  // Rank 3 sleeps 200 ms a step, so it is still in its first epoch when it is killed at 3 s:
  // staleness 0 (fixed shares, the others wait for it) keeps the job going that long; dealt
  // batches would let the others finish the epochs without it.
  const std::string marker = Tmp(NewMarker());
  auto run = [&](int np, int victim, bool recovery) {
    std::vector<std::string> argv = {Bin("hooprun"), "-np", std::to_string(np)};
    if (recovery) argv.push_back("--enable-recovery");
    argv.insert(argv.end(), {Bin("hoop-train"),
                             "--strategy",
                             "ps",
                             "--staleness",
                             "0",
                             "--epochs",
                             "3",
                             "--train-limit",
                             "3000",
                             "--test-limit",
                             "300",
                             "--progress",
                             "0",
                             "--threads",
                             "1",
                             "--slow-rank",
                             std::to_string(np - 1),
                             "--slow-ms",
                             "200",
                             "--metrics",
                             marker + ".csv"});
    ProcResult r;
    std::thread job([&] { r = RunProc(argv, Within(90)); });
    std::this_thread::sleep_for(std::chrono::seconds(3));
    const int killed = SignalRank(marker, victim, SIGKILL);
    job.join();
    CHECK(killed == 1);
    return r;
  };
  auto worker = run(4, 3, true);
  INFO(worker.output);
  CHECK(worker.output.find("hooprun: rank 3 (pid") != std::string::npos);
  CHECK(worker.output.find("the other ranks go on (--enable-recovery)") != std::string::npos);
  CHECK(worker.output.find("worker rank 3 is gone (its link: ") != std::string::npos);
  // The link's own rank numbers are said to be the link's, not the job's.
  CHECK(worker.output.find("on the link, ranks are the link's: the worker is its rank 1, this server its rank 0") !=
        std::string::npos);
  CHECK(worker.output.find("epoch 3/3:") != std::string::npos);
  CHECK(worker.output.find("2 of 3 worker(s) reported") != std::string::npos);
  CHECK(worker.output.find("hoop-train: 2 of 3 worker(s) finished; 1 gone") != std::string::npos);
  CHECK(worker.exit_code == 128 + SIGKILL);  // hooprun: the failed rank's code, once the rest ended
  auto server = run(3, 0, false);
  INFO(server.output);
  CHECK(server.exit_code != 0);
  CHECK(server.output.find("parameter server rank 0 is gone") != std::string::npos);
  CHECK(server.output.find("hooprun: rank 0 (pid") != std::string::npos);
  CHECK(WaitGone(marker, 10) == 0);
  std::remove((marker + ".csv").c_str());
}

TEST_CASE("--strategy pipeline: 2 and 3 stages reach one rank's parameters; 2 x 2 reaches sync's on 2", "[train]") {
  // 320 images: 10 steps of 32. Micro-batches run oneDNN's kernels for another batch size, whose
  // rounding differs; over 20 steps that can flip a ReLU's or a max-pool's choice and grow from
  // there (seen: 3% apart at step 20 with oneDNN held to SSE4.1 on an AMD EPYC, while both
  // schedules matched one rank to 1e-6 over 5 and 10 steps for 8 seeds at SSE4.1, AVX2 and the
  // machine's own ISA), which would be no error of the pipeline's.
  const std::vector<std::string> small = {"--epochs",   "1", "--train-limit", "320", "--test-limit", "100",
                                          "--progress", "0", "--threads",     "1"};
  auto run = [&](int np, std::vector<std::string> extra, const std::string& ck) {
    auto args = small;
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--checkpoint", ck});
    return Train(np, args);
  };
  const std::string one = Tmp("pp-sync1"), two = Tmp("pp-sync2"), s2 = Tmp("pp-2"), s3 = Tmp("pp-3"),
                    s22 = Tmp("pp-22");
  auto r1 = run(1, {}, one), r2 = run(2, {}, two);
  // 32 images a step in micro-batches summing to them: gradients summed over the micro-batches.
  auto p2 = run(2, {"--strategy", "pipeline", "--stages", "2", "--micro-batches", "4", "--schedule-pipe", "gpipe"}, s2);
  auto p3 = run(3, {"--strategy", "pipeline", "--stages", "3", "--micro-batches", "3"}, s3);
  auto p22 = run(4, {"--strategy", "pipeline", "--stages", "2"}, s22);
  INFO(r1.output << r2.output << p2.output << p3.output << p22.output);
  REQUIRE((r1.exit_code == 0 && r2.exit_code == 0 && p2.exit_code == 0 && p3.exit_code == 0 && p22.exit_code == 0));
  // 10 steps, the same sums in other orders (micro-batches).
  const double bound = SgdRoundingBound(10);
  std::string where;
  const double d2 = RelDiff(Load(one, "lenet"), Load(s2, "lenet")), d3 = RelDiff(Load(one, "lenet"), Load(s3, "lenet")),
               d22 = RelDiff(Load(two, "lenet"), Load(s22, "lenet"), &where);
  INFO("relative differences: 2 stages " << d2 << ", 3 stages " << d3 << ", 2x2 " << d22 << " at " << where
                                         << "; bound " << bound);
  CHECK(d2 < bound);
  CHECK(d3 < bound);
  CHECK(d22 < bound);
  CHECK(p3.output.find("pipeline: 3 stage(s) x 1 replica(s), batch 32 per replica in 3 micro-batch(es), schedule 1f1b; "
                       "stage 0: conv1..") != std::string::npos);
  CHECK(p22.output.find("| pipeline 2x2, 4 micro-batch(es), 1f1b") != std::string::npos);
  // It learns.
  auto learn = Train(4, {"--strategy", "pipeline", "--stages", "2", "--epochs", "2", "--train-limit", "4000",
                         "--test-limit", "500", "--progress", "0", "--threads", "1"});
  INFO(learn.output);
  REQUIRE(learn.exit_code == 0);
  const size_t at = learn.output.find("epoch 2/2:");
  REQUIRE(at != std::string::npos);
  double acc = 0;
  CHECK(std::sscanf(learn.output.c_str() + learn.output.find("test loss", at), "test loss %*f acc %lf", &acc) == 1);
  CHECK(acc > 65);
  // Energy as with data parallelism (job_energy.h): measured on every host, or why not, once.
  const bool why = learn.output.find("hoop-train: energy: CPU ") != std::string::npos;
  CHECK((why || learn.output.find("images/J | pipeline 2x2") != std::string::npos));
  if (why) CHECK(learn.output.find("| energy n/a | pipeline 2x2") != std::string::npos);
  // Refused, each with its reason: more stages than layers, ranks that are no whole pipelines,
  // pipeline options without the strategy, more micro-batches than images.
  auto deep = Train(12, {"--strategy", "pipeline", "--stages", "12", "--train-limit", "64"}, 60);
  CHECK(deep.output.find("--stages 12: --model lenet has 11 layers to split, so at most 11 stages") !=
        std::string::npos);
  auto odd = Train(3, {"--strategy", "pipeline", "--stages", "2", "--train-limit", "64"}, 30);
  CHECK(odd.output.find("--stages 2: the job's 3 rank(s) do not make whole pipelines") != std::string::npos);
  auto stray = Train(1, {"--micro-batches", "2"}, 30);
  CHECK(stray.output.find("--micro-batches is for --strategy pipeline") != std::string::npos);
  auto tiny = Train(1, {"--strategy", "pipeline", "--batch", "4", "--micro-batches", "8"}, 30);
  CHECK(tiny.output.find("--micro-batches 8: more than the 4 images of --batch") != std::string::npos);
  for (auto& f : {one, two, s2, s3, s22}) std::remove(f.c_str());
}

TEST_CASE("--strategy pipeline: a killed stage ends the job with an error naming where", "[train]") {
  const std::string marker = Tmp(NewMarker());
  std::vector<std::string> argv = {Bin("hooprun"),
                                   "-np",
                                   "2",
                                   Bin("hoop-train"),
                                   "--strategy",
                                   "pipeline",
                                   "--epochs",
                                   "3",
                                   "--train-limit",
                                   "3000",
                                   "--test-limit",
                                   "300",
                                   "--progress",
                                   "0",
                                   "--threads",
                                   "1",
                                   "--slow-rank",
                                   "1",
                                   "--slow-ms",
                                   "200",
                                   "--metrics",
                                   marker + ".csv"};
  ProcResult r;
  std::thread job([&] { r = RunProc(argv, Within(90)); });
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const int killed = SignalRank(marker, 1, SIGKILL);
  job.join();
  INFO(r.output);
  CHECK(killed == 1);
  CHECK(r.exit_code != 0);
  CHECK(r.output.find("hooprun: rank 1 (pid") != std::string::npos);
  CHECK(r.output.find("[0] hoop-train: rank 0: epoch 1, step ") != std::string::npos);
  CHECK(r.seconds < 30);
  CHECK(WaitGone(marker, 10) == 0);
  std::remove((marker + ".csv").c_str());
}

TEST_CASE("--strategy ps and pipeline resume at an epoch's end where an unbroken run ends", "[train]") {
  struct Case {
    int np;
    std::vector<std::string> args;
  };
  // ps with staleness 0 and a pipeline of 2 stages x 2: both deterministic, so the resumed run
  // must end on the unbroken run's parameters.
  for (const Case& c :
       {Case{3, {"--strategy", "ps", "--staleness", "0"}}, Case{4, {"--strategy", "pipeline", "--stages", "2"}}}) {
    const std::string straight = Tmp("res-a"), broken = Tmp("res-b");
    auto run = [&](const std::string& epochs, const std::string& ck, bool resume) {
      std::vector<std::string> args = c.args;
      // A constant rate after warm-up: the cosine's length depends on --epochs.
      args.insert(args.end(), {"--epochs", epochs, "--train-limit", "640", "--test-limit", "100", "--progress", "0",
                               "--threads", "1", "--schedule", "constant", "--checkpoint", ck});
      if (resume) args.push_back("--resume");
      return Train(c.np, args);
    };
    auto a = run("2", straight, false), b1 = run("1", broken, false), b2 = run("2", broken, true);
    INFO(a.output << b1.output << b2.output);
    REQUIRE((a.exit_code == 0 && b1.exit_code == 0 && b2.exit_code == 0));
    CHECK(b2.output.find("resuming after epoch 1") != std::string::npos);
    CHECK(b2.output.find("epoch 1/2") == std::string::npos);
    CHECK(b2.output.find("epoch 2/2:") != std::string::npos);
    CHECK(MaxDiff(Load(straight, "lenet"), Load(broken, "lenet")) == 0);  // resumed from every bit: exact
    CHECK(Load(broken, "lenet").info.epochs_done == 2);
    auto done = run("2", broken, true);  // nothing left
    CHECK(done.exit_code == 0);
    CHECK(done.output.find("holds 2 finished epoch(s), --epochs is 2: nothing left to train") != std::string::npos);
    for (auto& f : {straight, broken}) std::remove(f.c_str());
  }
}

TEST_CASE("--strategy pipeline: Ctrl-C checkpoints mid-epoch and --resume ends where an unbroken run does", "[train]") {
  const std::vector<std::string> common = {"--strategy", "pipeline", "--train-limit", "30000", "--test-limit", "500",
                                           "--epochs",   "2",        "--threads",     "1",     "--progress",   "0"};
  const std::string straight = Tmp("pi-straight"), broken = Tmp("pi-broken");
  auto args = common;
  args.insert(args.end(), {"--checkpoint", straight});
  auto a = Train(2, args);
  INFO(a.output);
  REQUIRE(a.exit_code == 0);
  args = common;
  args.insert(args.end(), {"--checkpoint", broken});
  Interrupt(args, broken, 3.0);
  ResumeMatches(args, straight, broken);
  for (auto& f : {straight, broken}) std::remove(f.c_str());
}

TEST_CASE("--backup-workers: steps use the first gradients to arrive, a straggler's are dropped", "[train]") {
  // 3 ranks, rank 2 slowed by 10 ms a step, 1 backup worker: rank 0 uses its own gradient and
  // the next to arrive, and the job still learns.
  auto r = Train(3, {"--backup-workers", "1", "--slow-rank", "2", "--slow-ms", "10", "--epochs", "2", "--train-limit",
                     "3000", "--test-limit", "300", "--progress", "0", "--threads", "1"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("| 32 gradient(s) dropped so far (1 backup worker(s))") != std::string::npos);  // one a step
  const size_t at = r.output.find("epoch 2/2:");
  REQUIRE(at != std::string::npos);
  double acc = 0;
  CHECK(std::sscanf(r.output.c_str() + r.output.find("test loss", at), "test loss %*f acc %lf", &acc) == 1);
  CHECK(acc > 65);
  // A straggler far behind (600 ms a step): it finds the means of the steps it fell behind by
  // already there, and takes them without computing. Each step it computes costs it 600 ms of
  // sleep, so in rank 0's epoch of T seconds it can compute only about T / 0.6 of the 32 (a few
  // more: its first and last steps straddle the epoch's ends; 6 where T / 0.6 was 3.2): it must
  // skip most of the rest, and the check asks for half of them. Unlike a fixed count ("more than
  // 16", which failed twice in CI under ctest -j2: 11 and 1 skipped, at 200 ms), this holds on a
  // loaded machine, where the others' steps slow down and the straggler's sleep does not.
  auto far = Train(3, {"--backup-workers", "1", "--slow-rank", "2", "--slow-ms", "600", "--epochs", "1",
                       "--train-limit", "3000", "--test-limit", "300", "--progress", "0", "--threads", "1"});
  INFO(far.output);
  REQUIRE(far.exit_code == 0);
  long skipped = 0;
  const size_t dropped = far.output.find("(1 backup worker(s)), ");
  REQUIRE(dropped != std::string::npos);
  CHECK(std::sscanf(far.output.c_str() + dropped, "(1 backup worker(s)), %ld step(s) skipped", &skipped) == 1);
  double epoch_s = 0;
  const size_t rate = far.output.find("images/s | ", far.output.find("epoch 1/1:"));
  REQUIRE(rate != std::string::npos);
  CHECK(std::sscanf(far.output.c_str() + rate, "images/s | %lf s", &epoch_s) == 1);
  CHECK(static_cast<double>(skipped) >= (32 - epoch_s / 0.6) / 2);
  auto all = Train(2, {"--backup-workers", "2", "--train-limit", "64"}, 30);
  CHECK(all.exit_code == 1);
  CHECK(all.output.find("--backup-workers 2: at least one of the 2 ranks' gradients must be used") !=
        std::string::npos);
  auto hog = Train(1, {"--backup-workers", "1", "--strategy", "hogwild"}, 30);
  CHECK(hog.output.find("--backup-workers is for --strategy sync") != std::string::npos);
}

TEST_CASE("--sweep trains every configuration across the ranks; --ensemble averages them", "[train]") {
  const std::vector<std::string> small = {"--epochs",     "1",   "--train-limit", "1500",
                                          "--test-limit", "300", "--progress",    "0"};
  // 3 configurations on 2 ranks: 2 groups of 1 rank, the first trains two in turn.
  auto args = small;
  args.insert(args.end(), {"--sweep", "lr=0.01,0.03,0.05", "--ensemble"});
  auto r = Train(2, args);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("sweep of 3 configuration(s) on 2 rank(s): 2 group(s)") != std::string::npos);
  for (const char* label :
       {"| lr=0.01 | ", "| lr=0.03 | ", "| lr=0.05 | ", "| ensemble: the 3 models' averaged probabilities | "})
    CHECK(r.output.find(label) != std::string::npos);
  CHECK(r.output.find("[1] [lr=0.03] epoch 1/1: ") != std::string::npos);  // each run's lines carry its configuration
  // One configuration on a group of 2 ranks: the ensemble of one model is that model, so its
  // accuracy is the member's (the two ranks' shards of the test set add up to the whole).
  args = small;
  args.insert(args.end(), {"--sweep", "seed=3", "--ensemble"});
  auto one = Train(2, args);
  INFO(one.output);
  REQUIRE(one.exit_code == 0);
  const size_t row = one.output.find("| seed=3 | "), ens = one.output.find("averaged probabilities | ");
  REQUIRE((row != std::string::npos && ens != std::string::npos));
  CHECK(one.output.substr(row + 11, 6) == one.output.substr(ens + 25, 6));
  // Refusals.
  auto bad = Train(1, {"--sweep", "colour=red"}, 30);
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("--sweep 'colour=red': expected KEY=V1,V2,... with KEY one of lr, batch") != std::string::npos);
  auto lone = Train(1, {"--ensemble"}, 30);
  CHECK(lone.output.find("--ensemble averages a sweep's models: it needs --sweep") != std::string::npos);
  auto value = Train(1, {"--sweep", "lr=0.01,fast", "--train-limit", "64"}, 30);
  CHECK(value.exit_code == 1);
  CHECK(value.output.find("--sweep configuration lr=fast: --lr 'fast': expected a number") != std::string::npos);
}

// The test accuracy on rank 0's last epoch line.
static double LastAccuracy(const std::string& out) {
  const size_t at = out.rfind("test loss");
  double acc = -1;
  if (at != std::string::npos) std::sscanf(out.c_str() + at, "test loss %*f acc %lf", &acc);
  return acc;
}

TEST_CASE("--strategy distill: alpha 0 is sync; alpha 1 learns from the teacher alone; ensembles; errors", "[train]") {
  const std::vector<std::string> small = {"--epochs",   "1", "--train-limit", "1500", "--test-limit", "400",
                                          "--progress", "0", "--threads",     "1"};
  auto with = [&](std::vector<std::string> extra) {
    auto args = small;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  // A teacher: the small resnet, trained for an epoch.
  const std::string teacher = Tmp("teacher"), a = Tmp("d-sync"), b = Tmp("d-alpha0");
  auto t = Train(1, with({"--model", "resnet", "--checkpoint", teacher}));
  INFO(t.output);
  REQUIRE(t.exit_code == 0);
  // alpha 0: the labels' cross-entropy alone, the same training as sync (but for rounding).
  auto sync = Train(2, with({"--checkpoint", a}));
  auto zero = Train(2, with({"--strategy", "distill", "--teacher", teacher, "--alpha", "0", "--checkpoint", b}));
  INFO(sync.output << zero.output);
  REQUIRE((sync.exit_code == 0 && zero.exit_code == 0));
  CHECK(RelDiff(Load(a, "lenet"), Load(b, "lenet")) < SgdRoundingBound(24));  // 24 steps of 2 x 32
  CHECK(zero.output.find("hoop-train: distilling from resnet from " + teacher +
                         " (1 epoch(s)), temperature 4, alpha 0") != std::string::npos);
  CHECK(zero.output.find("| teacher's forward ") != std::string::npos);
  // alpha 1: no label is used; what the student learns, it learns from the teacher's soft targets
  // (about 53% after its epoch on these 1500 images; measured: the student reaches 49.5%).
  auto soft = Train(
      2, with({"--strategy", "distill", "--teacher", teacher, "--alpha", "1", "--temperature", "1", "--epochs", "2"}));
  INFO(soft.output);
  REQUIRE(soft.exit_code == 0);
  CHECK(LastAccuracy(t.output) > 40);
  CHECK(LastAccuracy(soft.output) > 0.75 * LastAccuracy(t.output));  // chance is 10
  // A sweep's checkpoints (FILE.K) are an ensemble for --teacher FILE.
  const std::string ens = Tmp("ensemble");
  auto sweep = Train(2, with({"--sweep", "seed=1,2", "--checkpoint", ens}));
  INFO(sweep.output);
  REQUIRE(sweep.exit_code == 0);
  auto from_ens = Train(1, with({"--strategy", "distill", "--teacher", ens, "--temperature", "2"}));
  INFO(from_ens.output);
  REQUIRE(from_ens.exit_code == 0);
  CHECK(from_ens.output.find("distilling from an ensemble of 2 (lenet, lenet), temperature 2, alpha 0.5") !=
        std::string::npos);
  // A teacher that is not there: every rank fails with the path, no hang.
  auto missing = Train(2, with({"--strategy", "distill", "--teacher", "/nonexistent/t.ckpt"}), 60);
  CHECK(missing.exit_code != 0);
  CHECK(missing.output.find("--teacher /nonexistent/t.ckpt: no such checkpoint") != std::string::npos);
  auto junk = Tmp("junk");
  std::ofstream(junk) << "not a checkpoint";
  auto bad = Train(2, with({"--strategy", "distill", "--teacher", junk}), 60);
  CHECK(bad.exit_code != 0);
  CHECK(bad.output.find("checkpoint " + junk + ": not a hoop checkpoint") != std::string::npos);
  for (const std::string& f : {teacher, a, b, ens + ".0", ens + ".1", junk}) std::remove(f.c_str());
}

TEST_CASE("perf/strategies: every strategy with and without a straggler, its table and plot", "[train][perf]") {
  const std::string out = Tmp("strategies");
  auto r = RunProc({HOOP_SOURCE_DIR "/perf/strategies", "--ranks", "2", "--epochs", "2", "--train-limit", "256",
                    "--test-limit", "200", "--target", "0.4", "--build", HOOP_BIN_DIR "/..", "--out", out},
                   Within(180));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  for (const char* row :
       {"| sync | ", "| sync, 1 backup worker | ", "| hogwild | ", "| ps, 1 server | ", "| pipeline, 2 stages x 1 | ",
        "| sync, rank 1 +", "| hogwild, rank 1 +", "| ps, 1 server, rank 1 +", "| pipeline, 2 stages x 1, rank 1 +",
        "| teacher: resnet, sync | ", "| distill: lenet from the resnet (T 4, alpha 0.5) | "})
    CHECK(r.output.find(row) != std::string::npos);
  CHECK(r.output.find("wrote " + out + "/strategies.png") != std::string::npos);
  std::ifstream md(out + "/train-strategies.md");
  CHECK(md.good());
  std::filesystem::remove_all(out);
}
