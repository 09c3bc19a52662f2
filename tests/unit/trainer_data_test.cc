// The trainer's logic around the layers: the distributed sampler's rank math, the learning-rate
// schedule, momentum SGD, checkpoints (round trip, every corruption named), the Fashion-MNIST
// reader's errors on real gzip files, and the metrics files.
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/device.h"
#include "trainer/balance.h"
#include "trainer/checkpoint.h"
#include "trainer/energy.h"
#include "trainer/layer_factory.h"
#include "trainer/metrics.h"
#include "trainer/mnist.h"
#include "trainer/device_choice.h"
#include "trainer/options.h"
#include "trainer/sampler.h"
#include "trainer/sgd.h"
#include "trainer/sweep.h"
#include "tests/support/usage_names.h"

using namespace hoop::train;

namespace {

std::string TempDir() {
  char tmpl[] = "/tmp/hoop-trainer-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  return tmpl;
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void WriteGz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  gzclose(f);
}

std::string Idx(int dims_code, std::vector<uint32_t> dims, size_t payload, uint8_t fill) {
  std::string b = {0, 0, 8, static_cast<char>(dims_code)};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<char>((d >> s) & 0xff));
  b.append(payload, static_cast<char>(fill));
  return b;
}

}  // namespace

TEST_CASE("sampler: every image once per epoch, same global batches for any rank count", "[trainer]") {
  for (int64_t images : {1, 7, 100, 1001}) {
    for (int ranks : {1, 2, 3, 4, 8}) {
      const int batch = 5;
      std::vector<std::vector<int64_t>> order_by_step;
      std::multiset<int64_t> seen;
      for (int r = 0; r < ranks; ++r) {
        DistributedSampler s(images, batch, r, ranks, 42);
        auto perm = s.Shuffle(3);
        order_by_step.resize(s.steps_per_epoch());
        for (int64_t step = 0; step < s.steps_per_epoch(); ++step) {
          Slice sl = s.At(step);
          REQUIRE(sl.count() >= 0);
          REQUIRE(sl.count() <= batch);
          for (int64_t i = sl.begin; i < sl.end; ++i) {
            seen.insert(perm[i]);
            order_by_step[step].push_back(perm[i]);
          }
        }
        // step_images is the sum of the ranks' counts.
        for (int64_t step = 0; step < s.steps_per_epoch(); ++step) {
          int64_t total = 0;
          for (int q = 0; q < ranks; ++q) total += DistributedSampler(images, batch, q, ranks, 42).At(step).count();
          REQUIRE(s.At(step).step_images == total);
        }
      }
      REQUIRE(static_cast<int64_t>(seen.size()) == images);
      REQUIRE(static_cast<int64_t>(std::set<int64_t>(seen.begin(), seen.end()).size()) == images);
      // One rank with the global batch visits the same images in the same steps.
      DistributedSampler one(images, batch * ranks, 0, 1, 42);
      auto perm = one.Shuffle(3);
      REQUIRE(one.steps_per_epoch() == static_cast<int64_t>(order_by_step.size()));
      for (int64_t step = 0; step < one.steps_per_epoch(); ++step) {
        Slice sl = one.At(step);
        std::multiset<int64_t> a(perm.begin() + sl.begin, perm.begin() + sl.end);
        std::multiset<int64_t> b(order_by_step[step].begin(), order_by_step[step].end());
        REQUIRE(a == b);
      }
    }
  }
  DistributedSampler s(1000, 10, 0, 1, 1);
  auto e0 = s.Shuffle(0);
  auto e1 = s.Shuffle(1);
  CHECK(e0 != e1);                                                // a new order every epoch
  CHECK(DistributedSampler(1000, 10, 0, 1, 1).Shuffle(1) == e1);  // ... the same on every rank
  int64_t b, e;
  Shard(10, 2, 3, &b, &e);
  CHECK((b == 6 && e == 10));
}

TEST_CASE("learning rate: scaled by ranks, warm-up, cosine", "[trainer]") {
  LrSchedule s{0.1, 4, 10, 110, true};
  CHECK(s.At(0) == Approx(0.1 + 0.3 * 1 / 10));
  CHECK(s.At(9) == Approx(0.4));
  CHECK(s.At(10) == Approx(0.4));
  CHECK(s.At(60) == Approx(0.2));
  CHECK(s.At(110) == Approx(0.0).margin(1e-12));
  LrSchedule c{0.1, 2, 0, 100, false};
  CHECK(c.At(0) == Approx(0.2));
  CHECK(c.At(99) == Approx(0.2));
}

TEST_CASE("sgd: momentum and weight decay as PyTorch", "[trainer]") {
  Param p;
  p.value = Tensor({1});
  p.grad = Tensor({1});
  p.value.data = {1.0f};
  Sgd sgd({&p}, 0.9, 0.1);
  p.grad.data = {0.5f};
  sgd.Step(0.1);  // v = 0.5 + 0.1 = 0.6; w = 1 - 0.06
  CHECK(p.value.data[0] == Approx(0.94));
  sgd.Step(0.1);  // v = 0.54 + 0.5 + 0.094 = 1.134; w = 0.94 - 0.1134
  CHECK(p.value.data[0] == Approx(0.8266));
  CHECK(sgd.State()[0].first == ".momentum");
}

TEST_CASE("checkpoint: round trip, atomic, and every corruption named", "[trainer]") {
  const std::string dir = TempDir(), path = dir + "/ck";
  Tensor a({3}), b({2, 2});
  a.data = {1, 2, 3};
  b.data = {4, 5, 6, 7};
  NamedTensors ts = {{"a", &a}, {"b", &b}};
  CheckpointInfo saved;
  saved.model = "lenet", saved.epochs_done = 2, saved.steps_done = 1876;
  saved.step_in_epoch = 17, saved.ranks = 4, saved.batch = 32, saved.wall_s = 12.5;
  saved.partial = {1.5, 2.5}, saved.history = {1, 2, 3};
  REQUIRE(SaveCheckpoint(path, saved, ts).ok());
  Tensor a2({3}), b2({2, 2});
  CheckpointInfo info;
  REQUIRE(LoadCheckpoint(path, "lenet", {{"a", &a2}, {"b", &b2}}, &info).ok());
  CHECK(a2.data == a.data);
  CHECK(b2.data == b.data);
  CHECK(info.epochs_done == 2);
  CHECK(info.steps_done == 1876);
  CHECK(info.step_in_epoch == 17);  // where a mid-epoch checkpoint stopped, and the run that wrote it
  CHECK(info.ranks == 4);
  CHECK(info.batch == 32);
  CHECK(info.wall_s == 12.5);
  CHECK(info.partial == std::vector<double>{1.5, 2.5});
  CHECK(info.history == std::vector<double>{1, 2, 3});
  // No temporary file is left behind.
  struct stat st;
  CHECK(stat((path + ".tmp." + std::to_string(getpid())).c_str(), &st) != 0);
  auto fails = [&](const std::string& bytes, const std::string& model, NamedTensors want, const std::string& text) {
    std::ofstream(path + ".bad", std::ios::binary) << bytes;
    auto s = LoadCheckpoint(path + ".bad", model, want, &info);
    INFO(s.message());
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(s.message(), Catch::Contains(text));
  };
  const std::string good = Slurp(path);
  std::string flipped = good;
  flipped[30] ^= 1;
  fails(flipped, "lenet", ts, "checksum mismatch");
  fails(good.substr(0, good.size() - 9), "lenet", ts, "checksum mismatch");
  fails("hello", "lenet", ts, "not a hoop checkpoint");
  fails(good, "resnet", ts, "holds model 'lenet', but this run trains 'resnet'");
  Tensor c({3});
  fails(good, "lenet", {{"a", &a2}, {"b", &b2}, {"c", &c}}, "lacks tensor 'c'");
  fails(good, "lenet", {{"a", &a2}}, "holds tensor 'b', which this model does not have");
  Tensor big({4});
  fails(good, "lenet", {{"a", &big}, {"b", &b2}}, "tensor 'a' has 3 values, the model 4");
  auto missing = LoadCheckpoint(dir + "/none", "lenet", ts, &info);
  CHECK_THAT(missing.message(), Catch::Contains("cannot open " + dir + "/none"));
  auto unwritable = SaveCheckpoint(dir + "/no/such/dir/ck", saved, ts);
  CHECK_THAT(unwritable.message(), Catch::Contains("cannot create"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("fashion-mnist reader: real gzip IDX files and named errors", "[trainer]") {
  const std::string dir = TempDir();
  auto write_set = [&](uint32_t images, uint32_t labels, uint8_t label) {
    WriteGz(dir + "/train-images-idx3-ubyte.gz", Idx(3, {images, 28, 28}, images * 784ul, 255));
    WriteGz(dir + "/train-labels-idx1-ubyte.gz", Idx(1, {labels}, labels, label));
  };
  write_set(3, 3, 9);
  auto ok = LoadFashionMnist(dir, "train");
  REQUIRE(ok.ok());
  CHECK(ok->count == 3);
  Tensor x;
  std::vector<uint8_t> y;
  int64_t idx[] = {2, 0};
  Gather(*ok, idx, 2, x, y);
  CHECK(x.shape == Shape{2, 1, 28, 28});
  CHECK(x.data[5] == Approx((1.0 - 0.2860) / 0.3530));
  CHECK(y == std::vector<uint8_t>{9, 9});

  auto err = [&](const std::string& text) {
    auto r = LoadFashionMnist(dir, "train");
    REQUIRE_FALSE(r.ok());
    INFO(r.status().message());
    CHECK_THAT(r.status().message(), Catch::Contains(text));
  };
  write_set(3, 2, 1);
  err("holds 3 images but");
  write_set(3, 3, 10);
  err("label 10 of image 0 is not in 0..9");
  WriteGz(dir + "/train-images-idx3-ubyte.gz", Idx(3, {3, 28, 28}, 100, 0));
  err("truncated: expected 2352 bytes of data, got 100");
  WriteGz(dir + "/train-images-idx3-ubyte.gz", Idx(3, {3, 32, 32}, 3 * 1024, 0));
  err("images are 32x32, expected 28x28");
  WriteGz(dir + "/train-images-idx3-ubyte.gz", Idx(1, {3}, 3, 0));
  err("not an IDX file of u8 data with 3 dimension(s)");
  // A damaged gzip stream: valid header, garbage after it.
  write_set(3, 3, 1);
  std::string img = Slurp(dir + "/train-images-idx3-ubyte.gz");
  for (size_t i = 20; i < img.size() - 8; ++i) img[i] = static_cast<char>(i * 7);
  std::ofstream(dir + "/train-images-idx3-ubyte.gz", std::ios::binary) << img;
  err("train-images-idx3-ubyte.gz: ");
  std::remove((dir + "/train-labels-idx1-ubyte.gz").c_str());
  err("no train-labels-idx1-ubyte.gz (or train-labels-idx1-ubyte) in " + dir);
  auto none = LoadFashionMnist(kDefaultDataDir + std::string("-absent"), "train");
  CHECK_THAT(none.status().message(), Catch::Contains("give --data the directory"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("balance: shares in proportion to speed, and the sampler's uneven split", "[trainer]") {
  // 3:1 speeds over 64 images; a GPU rank beside two CPU ranks 100 times slower (94.1, 0.94,
  // 0.94 rounded by largest remainder); 1:2:3 over 7 (1.17, 2.33, 3.5).
  CHECK(SharesBySpeed({3000, 1000}, 64) == std::vector<int>{48, 16});
  CHECK(SharesBySpeed({5000, 50, 50}, 96) == std::vector<int>{94, 1, 1});
  // No rank is left out while there are enough images: 1000:1 over 64 would round to 64/0.
  CHECK(SharesBySpeed({1000, 1}, 64) == std::vector<int>{63, 1});
  // Unusable speeds (a rank that did no work) give the equal split; the sum is always kept.
  CHECK(SharesBySpeed({100, 0}, 64) == std::vector<int>{32, 32});
  CHECK(SharesBySpeed({1, 2, 3}, 7) == std::vector<int>{1, 2, 4});
  CHECK(SharesBySpeed({1, 1, 1}, 2) == std::vector<int>{1, 1, 0});
  CHECK(FormatShares({40, 24}) == "40/24");
  CHECK(*ParseShares("40,24") == std::vector<int>{40, 24});
  CHECK_THAT(ParseShares("40,x").status().message(), Catch::Contains("'x' is not an integer in [0, 65536]"));
  CHECK_THAT(ParseShares("0,0").status().message(), Catch::Contains("not all 0"));

  // Uneven shares: each global batch is still the same images, split without gaps or overlap.
  const int64_t images = 150;
  std::vector<DistributedSampler> ranks;
  for (int r = 0; r < 3; ++r) {
    ranks.emplace_back(images, 8, r, 3, 1);
    ranks.back().SetShares({10, 3, 7});
  }
  CHECK(ranks[0].steps_per_epoch() == 8);  // 150 / 20, rounded up
  for (int64_t step = 0; step < 8; ++step) {
    int64_t at = step * 20;
    for (int r = 0; r < 3; ++r) {
      Slice s = ranks[r].At(step);
      CHECK(s.begin == std::min(images, at));
      CHECK(s.step_images == std::min<int64_t>(20, images - step * 20));
      at = s.end;
    }
    CHECK(at == std::min<int64_t>(images, (step + 1) * 20));
  }
}

TEST_CASE("fashion-mnist padded to 32x32: a black border around the same image", "[trainer]") {
  Dataset d;
  d.count = 1;
  d.pixels.assign(28 * 28, 0);
  d.pixels[0] = 255;            // top-left pixel white
  d.pixels[27 * 28 + 27] = 51;  // bottom-right
  d.labels = {4};
  Tensor x;
  std::vector<uint8_t> y;
  int64_t idx[] = {0};
  Gather(d, idx, 1, x, y, 2);
  REQUIRE(x.shape == Shape{1, 1, 32, 32});
  const float black = -0.2860f / 0.3530f;
  CHECK(x.data[0] == Approx(black));  // border
  CHECK(x.data[31 * 32 + 31] == Approx(black));
  CHECK(x.data[2 * 32 + 2] == Approx((1.0 - 0.2860) / 0.3530));  // the image's (0, 0)
  CHECK(x.data[29 * 32 + 29] == Approx((0.2 - 0.2860) / 0.3530));
  CHECK(x.data[2 * 32 + 3] == Approx(black));  // a black pixel inside the image
  CHECK(y == std::vector<uint8_t>{4});
}

TEST_CASE("cifar-10 reader: binary batches, three channels, named errors", "[trainer]") {
  const std::string dir = TempDir();
  // Records: a label, then 1024 red, 1024 green, 1024 blue bytes.
  auto record = [](uint8_t label, uint8_t r, uint8_t g, uint8_t b) {
    std::string rec(1, static_cast<char>(label));
    rec += std::string(1024, static_cast<char>(r)) + std::string(1024, static_cast<char>(g)) +
           std::string(1024, static_cast<char>(b));
    return rec;
  };
  for (int i = 1; i <= 5; ++i)
    std::ofstream(dir + "/data_batch_" + std::to_string(i) + ".bin", std::ios::binary)
        << record(i, 255, 0, 128) << record(0, 0, 0, 0);
  std::ofstream(dir + "/test_batch.bin", std::ios::binary) << record(9, 1, 2, 3);
  auto train = LoadDataset(dir, "train");
  REQUIRE(train.ok());
  CHECK(train->name == "cifar-10");
  CHECK((train->count == 10 && train->channels == 3 && train->rows == 32 && train->cols == 32));
  CHECK(train->labels == std::vector<uint8_t>{1, 0, 2, 0, 3, 0, 4, 0, 5, 0});
  Tensor x;
  std::vector<uint8_t> y;
  int64_t idx[] = {4};
  Gather(*train, idx, 1, x, y);
  REQUIRE(x.shape == Shape{1, 3, 32, 32});
  CHECK(x.data[0] == Approx((1.0 - 0.4914) / 0.2470));         // red
  CHECK(x.data[1024 + 5] == Approx((0.0 - 0.4822) / 0.2435));  // green
  CHECK(x.data[2048 + 7] == Approx((128 / 255.0 - 0.4465) / 0.2616));
  CHECK(y == std::vector<uint8_t>{3});
  auto test = LoadDataset(dir, "test");
  REQUIRE(test.ok());
  CHECK((test->count == 1 && test->labels[0] == 9));
  // In the archive's own subdirectory too.
  REQUIRE(std::system(("mkdir -p " + dir + "/up && mv " + dir + "/*.bin " + dir + "/up/ && mv " + dir + "/up " + dir +
                       "/cifar-10-batches-bin")
                          .c_str()) == 0);
  CHECK(LoadDataset(dir, "test").ok());
  const std::string at = dir + "/cifar-10-batches-bin";
  std::ofstream(at + "/test_batch.bin", std::ios::binary) << record(9, 1, 2, 3) << "xyz";
  auto torn = LoadDataset(dir, "test");
  REQUIRE_FALSE(torn.ok());
  CHECK_THAT(torn.status().message(),
             Catch::Contains("test_batch.bin: 3076 bytes, not a whole number of CIFAR-10 records"));
  std::ofstream(at + "/test_batch.bin", std::ios::binary) << record(0, 0, 0, 0) << record(12, 0, 0, 0);
  CHECK_THAT(LoadDataset(dir, "test").status().message(), Catch::Contains("label 12 of record 1 is not in 0..9"));
  std::remove((at + "/data_batch_3.bin").c_str());
  CHECK_THAT(LoadDataset(dir, "train").status().message(), Catch::Contains("cannot open " + at + "/data_batch_3.bin"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("metrics: CSV and JSON files", "[trainer]") {
  const std::string dir = TempDir();
  EpochMetrics m;
  m.epoch = 1;
  m.images = 60000;
  m.test_acc = 0.8957;
  RunInfo run{"lenet", 2, 32, 1, "shm"};
  REQUIRE(WriteMetrics(dir + "/m.csv", run, {m, m}).ok());
  std::string csv = Slurp(dir + "/m.csv");
  CHECK(csv.rfind("model,ranks,batch,threads,transport,epoch,wall_s,", 0) == 0);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 3);
  CHECK_THAT(csv, Catch::Contains("lenet,2,32,1,shm,1,0,0,60000,"));
  REQUIRE(WriteMetrics(dir + "/m.json", run, {m}).ok());
  std::string json = Slurp(dir + "/m.json");
  CHECK_THAT(json, Catch::Contains("\"model\": \"lenet\", \"ranks\": 2"));
  CHECK_THAT(json, Catch::Contains("\"test_acc\": 0.8957"));
  CHECK_THAT(FormatEpoch(m, 2), Catch::Contains("epoch 1/2:"));
  // Energy: not available is null in JSON, an empty cell in CSV, "n/a" in the log; the reasons
  // travel in the JSON header.
  CHECK_THAT(json, Catch::Contains("\"cpu_joules\": null, \"gpu_joules\": null, \"images_per_joule\": null"));
  CHECK_THAT(csv, Catch::Contains(",cpu_joules,gpu_joules,images_per_joule,shares,rank_images_per_s,ranks_by_step\n"));
  CHECK_THAT(csv, Catch::EndsWith(",,,,,,\n"));
  CHECK_THAT(FormatEpoch(m, 2), Catch::EndsWith("| energy n/a"));
  m.cpu_joules = 1200;
  m.images_per_joule = 50;
  CHECK_THAT(FormatEpoch(m, 2), Catch::EndsWith("| energy: CPU 1200 J, GPU n/a, 50 images/J"));
  run.cpu_energy = "not available: \"quoted\" reason";
  REQUIRE(WriteMetrics(dir + "/e.json", run, {m}).ok());
  json = Slurp(dir + "/e.json");
  CHECK_THAT(json, Catch::Contains("\"cpu_energy\": \"not available: \\\"quoted\\\" reason\""));
  CHECK_THAT(json, Catch::Contains("\"cpu_joules\": 1200, \"gpu_joules\": null, \"images_per_joule\": 50"));
  // Per rank: shares and compute speeds, a JSON array each, one ';'-joined CSV cell each.
  m.shares = {40, 24};
  m.rank_images_per_s = {1500.5, 900};
  m.ranks_by_step = {1, 2, 41, 1};  // --elastic: 2 ranks from step 1, 1 from step 41
  run.devices = {"cpu", "cpu"};
  REQUIRE(WriteMetrics(dir + "/r.json", run, {m}).ok());
  REQUIRE(WriteMetrics(dir + "/r.csv", run, {m}).ok());
  CHECK_THAT(Slurp(dir + "/r.json"), Catch::Contains("\"shares\": [40,24], \"rank_images_per_s\": [1500.5,900.0], "
                                                     "\"ranks_by_step\": [1,2,41,1]}"));
  CHECK_THAT(Slurp(dir + "/r.json"), Catch::Contains("\"devices\": [\"cpu\",\"cpu\"]"));
  CHECK_THAT(Slurp(dir + "/r.csv"), Catch::EndsWith(",40;24,1500.5;900,1;2;41;1\n"));
  // Checkpoints of version 2 held 15 fields per epoch: the energy fields stay unset.
  std::vector<double> v = EpochValues(m);
  CHECK(v.size() == EpochFieldCount());
  CHECK(EpochFromValues(v.data(), v.size()).cpu_joules == 1200);
  CHECK(std::isnan(EpochFromValues(v.data(), 15).cpu_joules));
  std::filesystem::remove_all(dir);
}

TEST_CASE("energy counters: RAPL packages through powercap, wrap-around, and why not", "[trainer]") {
  // A powercap tree as the kernel lays it out: packages intel-rapl:N, their sub-zones
  // intel-rapl:N:M (not counted again), each with energy_uj and max_energy_range_uj.
  const std::string dir = TempDir();
  auto zone = [&](const std::string& name, const std::string& uj) {
    std::filesystem::create_directories(dir + "/" + name);
    std::ofstream(dir + "/" + name + "/energy_uj") << uj << "\n";
    std::ofstream(dir + "/" + name + "/max_energy_range_uj") << "1000000000\n";
  };
  zone("intel-rapl:0", "500000000");
  zone("intel-rapl:0:0", "7");
  zone("intel-rapl:1", "100");
  EnergyMeter meter(dir, "");
  REQUIRE(meter.cpu());
  CHECK_FALSE(meter.gpu());
  CHECK(meter.CpuJoules() == 0);
  zone("intel-rapl:0", "800000000");  // +300 J
  zone("intel-rapl:0:0", "900000000");
  zone("intel-rapl:1", "2000100");  // +2 J
  CHECK(meter.CpuJoules() == Approx(302));
  zone("intel-rapl:0", "100000000");  // wrapped at 1000 J: +300 J
  CHECK(meter.CpuJoules() == Approx(602));
  zone("intel-rapl:1", "garbage");  // a read that makes no sense is skipped, not a crash
  CHECK(meter.CpuJoules() == Approx(602));
  std::filesystem::remove_all(dir);

  EnergyMeter none(dir + "-absent", "libhoop-no-such-nvml.so");
  CHECK_FALSE(none.cpu());
  CHECK_THAT(none.cpu_why(), Catch::Contains("no " + dir + "-absent (this kernel or virtual machine exposes no RAPL"));
  CHECK_FALSE(none.gpu());
  CHECK_THAT(none.gpu_why(), Catch::Contains("NVML: libhoop-no-such-nvml.so not found"));
  CHECK(none.CpuJoules() == 0);
  CHECK(none.GpuJoules() == 0);
}

TEST_CASE("hoop-train options: defaults per model, refusals", "[trainer]") {
  auto parse = [](std::vector<const char*> args) {
    args.insert(args.begin(), "hoop-train");
    return ParseOptions(static_cast<int>(args.size()), const_cast<char**>(args.data()));
  };
  auto d = parse({});
  REQUIRE(d.ok());
  CHECK((d->model == "lenet" && d->epochs == 2 && d->batch == 32 && d->lr == 0.025));
  auto r = parse({"--model", "resnet"});
  CHECK((r->epochs == 4 && r->batch == 64));
  auto e = [&](std::vector<const char*> args, const std::string& text) {
    auto o = parse(args);
    REQUIRE_FALSE(o.ok());
    CHECK_THAT(o.status().message(), Catch::Contains(text));
  };
  e({"--model", "vgg"}, "--model 'vgg': expected lenet, resnet, resnet18 or resnet34");
  e({"--batch", "0"}, "--batch '0': expected an integer in [1, 65536]");
  CHECK(parse({"--batch-size", "48"})->batch == 48);  // PyTorch examples' name for it
  e({"--balance", "fast"}, "--balance 'fast': expected equal or speed");
  e({"--shares", "4,4", "--balance", "speed"}, "--shares fixes the split; --balance speed measures it: give one");
  CHECK(parse({"--shares", "40,24"})->shares == std::vector<int>{40, 24});
  e({"--slow-rank", "1"}, "--slow-rank and --slow-ms go together");
  e({"--sweep", "lr=0.1,,0.2"}, "--sweep 'lr=0.1,,0.2': an empty value");
  e({"--sweep", "lr=0.1", "--checkpoint", "ck", "--resume"}, "--sweep runs many models: --resume is for one");
  CHECK(parse({"--sweep", "lr=0.1,0.2", "--checkpoint", "ck"})->checkpoint == "ck");  // each writes ck.K
  // Distillation: the teacher is needed, and its settings are for it alone.
  e({"--strategy", "distill"}, "--strategy distill needs --teacher FILE");
  e({"--teacher", "t.ckpt"}, "--teacher is for --strategy distill");
  e({"--temperature", "2"}, "--temperature is for --strategy distill");
  e({"--alpha", "0.5"}, "--alpha is for --strategy distill");
  e({"--strategy", "distill", "--teacher", "t", "--temperature", "0"},
    "--temperature '0': expected a number in (0, 1000]");
  e({"--strategy", "distill", "--teacher", "t", "--alpha", "1.5"}, "--alpha '1.5': expected a number in [0, 1]");
  e({"--strategy", "distill", "--teacher", "t", "--elastic"}, "--elastic trains with --strategy sync");
  auto distill = parse({"--strategy", "distill", "--teacher", "a,b", "--temperature", "2.5", "--alpha", "0.5"});
  REQUIRE(distill.ok());
  CHECK((distill->teacher == "a,b" && distill->temperature == 2.5 && distill->alpha == 0.5));
  CHECK(parse({"--strategy", "distill", "--teacher", "t"})->temperature == 4);
  CHECK(parse({"--strategy", "distill", "--teacher", "t", "--deterministic"})->deterministic);
  CHECK(parse({"--strategy", "distill", "--teacher", "t", "--device", "cuda"})->device == "cuda");
  // --precision: bf16 on oneDNN where the CPU has it; fp16 and GPU ranks refused, saying why.
  CHECK(d->precision == "fp32");
  CHECK(d->grad_wire == "f32");
  e({"--precision", "fp8"}, "--precision 'fp8': expected fp32, bf16 or fp16");
  e({"--precision", "fp16"}, "--precision fp16: oneDNN's CPU convolutions (2.6, Debian's) have no fp16");
  e({"--precision", "bf16", "--device", "cuda"}, "--precision bf16: GPU ranks do not take --precision yet");
  e({"--precision", "bf16", "--layers", "native"}, "--precision bf16 runs the convolutions on oneDNN's bf16");
  e({"--grad-wire", "bf16", "--strategy", "ps"}, "--grad-wire is for the gradients' allreduce");
  e({"--grad-wire", "fp8"}, "--grad-wire 'fp8': expected f32 or bf16");
  CHECK(parse({"--grad-wire", "bf16"})->grad_wire == "bf16");  // f32 layers, bf16 on the wire
  if (HaveOneDnn() && OneDnnBf16Missing().empty()) {
    auto bf16 = parse({"--precision", "bf16"});
    REQUIRE(bf16.ok());
    CHECK(bf16->grad_wire == "bf16");
    CHECK(parse({"--precision", "bf16", "--grad-wire", "f32"})->grad_wire == "f32");
    CHECK(parse({"--precision", "bf16", "--strategy", "hogwild"})->grad_wire == "f32");
  } else {
    e({"--precision", "bf16"}, "--precision bf16");
  }
  CHECK(parse({"--sweep", "lr=0.1,0.2", "--sweep", "batch=8", "--ensemble"})->sweep.size() == 2);
  // Every combination, each parsed as a command line with the axes' options appended.
  auto configs = SweepConfigs({"--model", "resnet", "--epochs", "1"}, {"lr=0.1,0.2", "batch=8,16,24"});
  REQUIRE(configs.ok());
  REQUIRE(configs->size() == 6);
  CHECK((*configs)[0].label == "lr=0.1 batch=8");
  CHECK((*configs)[5].label == "lr=0.2 batch=24");
  CHECK(((*configs)[4].opts.lr == 0.2 && (*configs)[4].opts.batch == 16 && (*configs)[4].opts.model == "resnet"));
  CHECK((*configs)[1].opts.epochs == 1);
  e({"--slow-ms", "-3"}, "--slow-ms '-3': expected a number in [0, 60000]");
  CHECK(parse({"--slow-rank", "1", "--slow-ms", "2.5"})->slow_ms == 2.5);
  e({"--lr", "x"}, "--lr 'x': expected a number");
  e({"--resume"}, "--resume needs --checkpoint FILE");
  e({"--epochs"}, "--epochs needs a value");
  e({"--bogus"}, "unknown option '--bogus'");
  e({"--epoch", "3"}, "unknown option '--epoch' (did you mean --epochs?)");
  CHECK(parse({"--epochs=3", "--lr=0.5", "-tshm"})->epochs == 3);  // CLI11's forms too
  CHECK(parse({"--lr=0.5"})->lr == 0.5);
  CHECK(parse({"-tshm"})->transport == "shm");
  e({"-t", "ib"}, "expected shm, ucx, ofi or tcp");
  e({"--layers", "cudnn"}, "--layers 'cudnn': expected native or onednn");
  CHECK(d->layers == (HaveOneDnn() ? "onednn" : "native"));  // oneDNN where built with it
  CHECK(parse({"--layers", "onednn"})->layers == "onednn");
  // Devices: GPU ranks train with sync only; a hybrid job balances by speed unless told.
  CHECK(d->device == "cpu");
  e({"--device", "gpu"}, "--device 'gpu': expected cpu, cuda or auto");
  e({"--devices", "cuda,,cpu"}, "--devices 'cuda,,cpu': entry '' is not cpu or cuda");
  e({"--device", "cuda", "--devices", "cuda"}, "--device and --devices: give one");
  e({"--device", "cuda", "--strategy", "ps"}, "--device cuda: GPU ranks train with --strategy sync");
  e({"--devices", "cpu,cuda", "--backup-workers", "1"}, "--devices: GPU ranks train with --strategy sync");
  e({"--tf32", "yes"}, "--tf32 'yes': expected on or off");
  CHECK(parse({"--device", "cuda"})->balance == "equal");
  CHECK(parse({"--device", "auto"})->balance == "speed");
  CHECK(parse({"--devices", "cuda,cpu,cpu"})->balance == "speed");
  CHECK(parse({"--devices", "cuda,cpu", "--balance", "equal"})->balance == "equal");
  CHECK(parse({"--devices", "cuda,cpu", "--shares", "60,4"})->balance == "equal");
  CHECK(parse({"--devices", "cpu,cpu"})->balance == "equal");
  CHECK(parse({"--devices", "cuda,cpu"})->devices == std::vector<std::string>{"cuda", "cpu"});
  // Which device a rank takes (RankDevice): a CPU rank needs no CUDA; the list's length is checked.
  CHECK(RankDevice("cpu", {}, 0, 1, 0).value() == -1);
  CHECK(RankDevice("cuda", {"cpu", "cuda"}, 0, 2, 0).value() == -1);
  auto wrong = RankDevice("cpu", {"cpu", "cuda"}, 0, 3, 0);
  REQUIRE_FALSE(wrong.ok());
  CHECK_THAT(wrong.status().message(), Catch::Contains("--devices names 2 device(s) for 3 ranks"));
  if (!hoop::CudaDeviceCount().ok()) {  // this machine: no GPU, so cuda is refused and auto is the CPU
    auto none = RankDevice("cuda", {}, 1, 2, 1);
    REQUIRE_FALSE(none.ok());
    CHECK(none.status().message() ==
          "--device cuda: no CUDA device for rank 1: " + hoop::CudaDeviceCount().status().message());
    CHECK(RankDevice("auto", {}, 0, 2, 0).value() == -1);
    CHECK_THAT(CudaLayerFactory(0, true).status().message(),
               Catch::Contains(HaveCudaLayers() ? hoop::CudaDeviceCount().status().message()
                                                : "without the cuDNN/cuBLAS layers"));
  }
}

TEST_CASE("usage: hoop-train --help names every flag it reads", "[trainer][cli]") {
  std::vector<std::string> flags = hoop::train::FlagNames();
  CHECK(flags.size() > 40);
  CHECK(hoop::testing::MissingFromUsage(hoop::train::Usage(), flags) == std::vector<std::string>{});
}
