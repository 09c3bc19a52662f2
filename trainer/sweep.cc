#include "trainer/sweep.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "trainer/trainer.h"

namespace hoop::train {

namespace {

constexpr const char* kKeys[] = {"lr",     "batch", "momentum", "weight-decay", "warmup-epochs", "seed",
                                 "epochs", "model", "layers",   "temperature",  "alpha"};

Status SumOver(Communicator& comm, void* data, size_t count, DType dtype) {
  Buffer b{data, count, dtype, MemKind::kHost};
  return comm.Allreduce(b, b, ReduceOp::kSum).Wait();
}

}  // namespace

StatusOr<SweepAxis> ParseSweep(const std::string& text) {
  const size_t eq = text.find('=');
  SweepAxis axis;
  axis.key = text.substr(0, eq);
  if (eq == std::string::npos || std::find(std::begin(kKeys), std::end(kKeys), axis.key) == std::end(kKeys)) {
    std::string keys;
    for (const char* k : kKeys) {
      if (!keys.empty()) keys.append(", ");
      keys.append(k);
    }
    return InvalidArgument("--sweep '" + text + "': expected KEY=V1,V2,... with KEY one of " + keys);
  }
  size_t at = eq + 1;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    if (comma == at) return InvalidArgument("--sweep '" + text + "': an empty value");
    axis.values.push_back(text.substr(at, comma - at));
    at = comma + 1;
  }
  return axis;
}

StatusOr<std::vector<SweepConfig>> SweepConfigs(const std::vector<std::string>& args,
                                                const std::vector<std::string>& sweeps) {
  std::vector<SweepAxis> axes;
  for (const std::string& s : sweeps) {
    HOOP_ASSIGN_OR_RETURN(SweepAxis axis, ParseSweep(s));
    axes.push_back(std::move(axis));
  }
  std::vector<std::vector<std::pair<std::string, std::string>>> combos{{}};
  for (const SweepAxis& axis : axes) {
    std::vector<std::vector<std::pair<std::string, std::string>>> next;
    for (const auto& c : combos)
      for (const std::string& v : axis.values) {
        next.push_back(c);
        next.back().emplace_back(axis.key, v);
      }
    combos = std::move(next);
  }
  std::vector<SweepConfig> out;
  for (const auto& combo : combos) {
    std::vector<std::string> argv_s{"hoop-train"};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    SweepConfig c;
    for (const auto& [k, v] : combo) {
      argv_s.push_back(std::string("--").append(k));
      argv_s.push_back(v);
      if (!c.label.empty()) c.label.push_back(' ');
      c.label.append(k).append("=").append(v);
    }
    std::vector<char*> argv;
    for (std::string& a : argv_s) argv.push_back(a.data());
    auto o = ParseOptions(static_cast<int>(argv.size()), argv.data());
    if (!o.ok()) return o.status().WithContext("--sweep configuration " + c.label);
    c.opts = std::move(*o);
    out.push_back(std::move(c));
  }
  return out;
}

StatusOr<int> RunSweep(const std::vector<SweepConfig>& configs, bool ensemble, const Config& cfg, Communicator& world,
                       const Dataset& train, const Dataset& test, const std::atomic<int>* stop) {
  const auto begin = std::chrono::steady_clock::now();
  const int n = world.size(), c = static_cast<int>(configs.size()), groups = std::min(n, c);
  const int group = world.rank() * groups / n;
  HOOP_ASSIGN_OR_RETURN(auto sub, world.Split(group, world.rank()));
  if (world.rank() == 0)
    std::printf("hoop-train: sweep of %d configuration(s) on %d rank(s): %d group(s) of %d-%d rank(s)\n", c, n, groups,
                n / groups, (n + groups - 1) / groups);
  std::fflush(stdout);
  // Per configuration: test accuracy, seconds, images/s; filled by its group's first rank.
  std::vector<double> table(3 * c, 0.0);
  std::vector<float> probs;  // this rank's shards of its configurations' probabilities, summed
  for (int k = group; k < c; k += groups) {
    Options o = configs[k].opts;
    o.label = std::string("[").append(configs[k].label).append("] ");
    o.keep_predictions = ensemble;
    if (!o.metrics.empty()) o.metrics.append(".").append(std::to_string(k));
    if (!o.checkpoint.empty()) o.checkpoint.append(".").append(std::to_string(k));
    HOOP_ASSIGN_OR_RETURN(RunResult r, Train(o, cfg, *sub, train, test, stop));
    if (r.interrupted) return r.interrupted;
    if (sub->rank() == 0 && !r.epochs.empty()) {
      const EpochMetrics& last = r.epochs.back();
      table[3 * k] = last.test_acc;
      table[3 * k + 1] = last.wall_s;
      table[3 * k + 2] = last.images_per_s;
    }
    if (probs.size() < r.test_probs.size()) probs.resize(r.test_probs.size(), 0.0f);
    for (size_t i = 0; i < r.test_probs.size(); ++i) probs[i] += r.test_probs[i];
  }
  HOOP_RETURN_IF_ERROR(SumOver(world, table.data(), table.size(), DType::kF64).WithContext("sweep: gathering results"));
  double ensemble_acc = -1;
  if (ensemble) {
    // Every configuration evaluates the same test images (a sweep cannot vary --test-limit). Ranks
    // of one group hold disjoint shards and groups ran different configurations: the sum over all
    // ranks is the sum of every configuration's predictions.
    const size_t images = configs[0].opts.test_limit > 0 ? std::min<size_t>(configs[0].opts.test_limit, test.count)
                                                         : static_cast<size_t>(test.count);
    probs.resize(images * 10, 0.0f);
    HOOP_RETURN_IF_ERROR(SumOver(world, probs.data(), probs.size(), DType::kF32).WithContext("sweep: ensemble"));
    int64_t correct = 0;
    for (size_t i = 0; i < images; ++i) {
      const float* p = probs.data() + i * 10;
      correct += (std::max_element(p, p + 10) - p) == test.labels[i];
    }
    ensemble_acc = images ? static_cast<double>(correct) / static_cast<double>(images) : 0;
  }
  if (world.rank() != 0) return 0;
  std::printf("\n| configuration | test accuracy | seconds | images/s |\n|---|---|---|---|\n");
  for (int k = 0; k < c; ++k)
    std::printf("| %s | %.2f%% | %.1f | %.0f |\n", configs[k].label.c_str(), 100 * table[3 * k], table[3 * k + 1],
                table[3 * k + 2]);
  if (ensemble)
    std::printf("| ensemble: the %d models' averaged probabilities | %.2f%% | | |\n", c, 100 * ensemble_acc);
  std::printf("hoop-train: sweep done in %.1f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
  std::fflush(stdout);
  return 0;
}

}  // namespace hoop::train
