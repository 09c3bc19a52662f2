#include "trainer/job_energy.h"

#include <cstdio>

namespace hoop::train {

Status JobEnergy::Open(int rank, int local_rank, const Sum& sum, RunInfo& info, const std::string& label) {
  if (local_rank == 0) meter_ = std::make_unique<EnergyMeter>();
  // {hosts, hosts whose CPU counters read, hosts whose GPU counters read}
  std::vector<double> hosts{meter_ ? 1.0 : 0.0, meter_ && meter_->cpu() ? 1.0 : 0.0,
                            meter_ && meter_->gpu() ? 1.0 : 0.0};
  HOOP_RETURN_IF_ERROR(sum("energy.hosts", hosts));
  cpu_ = hosts[0] > 0 && hosts[1] == hosts[0];
  gpu_ = hosts[0] > 0 && hosts[2] == hosts[0];
  auto note = [&](bool all, bool mine, const std::string& why, double ok) {
    if (all) return std::string("measured");
    if (meter_ && !mine) return "not available: " + why;
    return "not available: readable on " + std::to_string(static_cast<int>(ok)) + " of " +
           std::to_string(static_cast<int>(hosts[0])) + " hosts";
  };
  info.cpu_energy = note(cpu_, meter_ && meter_->cpu(), meter_ ? meter_->cpu_why() : "", hosts[1]);
  info.gpu_energy = note(gpu_, meter_ && meter_->gpu(), meter_ ? meter_->gpu_why() : "", hosts[2]);
  if (rank == 0 && (!cpu_ || !gpu_))
    std::printf("%shoop-train: energy: CPU %s; GPU %s\n", label.c_str(), info.cpu_energy.c_str(),
                info.gpu_energy.c_str());
  polled_ = std::chrono::steady_clock::now();
  return Status::Ok();
}

void JobEnergy::Poll() {
  const auto now = std::chrono::steady_clock::now();
  if (!meter_ || now - polled_ < std::chrono::seconds(1)) return;  // often enough that no counter wraps twice unseen
  meter_->Poll();
  polled_ = now;
}

std::vector<double> JobEnergy::Joules() {
  if (!meter_) return {0.0, 0.0};
  polled_ = std::chrono::steady_clock::now();
  return {cpu_ ? meter_->CpuJoules() : 0.0, gpu_ ? meter_->GpuJoules() : 0.0};
}

StatusOr<std::vector<double>> JobEnergy::Since(const std::vector<double>& before, const Sum& sum) {
  std::vector<double> joules = Joules();  // this host's, then summed over hosts
  for (size_t i = 0; i < joules.size(); ++i) joules[i] -= before[i];
  HOOP_RETURN_IF_ERROR(sum("epoch.energy", joules));
  return joules;
}

void JobEnergy::Fill(const std::vector<double>& joules, double images, EpochMetrics& m) const {
  if (cpu_) m.cpu_joules = joules[0];
  if (gpu_) m.gpu_joules = joules[1];
  if ((cpu_ || gpu_) && joules[0] + joules[1] > 0) m.images_per_joule = images / (joules[0] + joules[1]);
}

}  // namespace hoop::train
