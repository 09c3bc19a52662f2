// A job's energy per epoch (energy.h has the counters): one EnergyMeter per host, on its local
// rank 0 (a counter covers the whole host); which kinds (CPU, GPU) every host can read, agreed
// once; and an epoch's joules, each host's difference summed over hosts, with images per joule.
// For the strategies whose ranks end their epochs together: data parallel (trainer.cc) and
// pipelines (strategy_pipeline.cc). The parameter servers' workers end theirs each at its own time,
// so those runs say why they do not measure.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "trainer/energy.h"
#include "trainer/metrics.h"

namespace hoop::train {

class JobEnergy {
 public:
  // Sums `values` over every rank (collective; `name` tells the calls apart).
  using Sum = std::function<Status(const std::string& name, std::vector<double>& values)>;

  // Collective. Fills info.cpu_energy and gpu_energy ("measured", or why not) and, on rank 0,
  // prints the reason once where a kind is not measured (`label` starts the line).
  Status Open(int rank, int local_rank, const Sum& sum, RunInfo& info, const std::string& label);
  // Reads the counters if a second has passed since the last read: RAPL's wrap (energy.h).
  void Poll();
  // This host's joules so far, {cpu, gpu} ({0, 0} on the ranks that do not read them).
  std::vector<double> Joules();
  // Collective: the energy since `before` (Joules() then), summed over hosts.
  StatusOr<std::vector<double>> Since(const std::vector<double>& before, const Sum& sum);
  // m's energy fields from Since's joules and `images` (the job's, that epoch) per joule; a kind
  // not measured stays unset.
  void Fill(const std::vector<double>& joules, double images, EpochMetrics& m) const;

 private:
  std::unique_ptr<EnergyMeter> meter_;
  bool cpu_ = false, gpu_ = false;  // readable on every host
  std::chrono::steady_clock::time_point polled_;
};

}  // namespace hoop::train
