// Energy counters, where the host exposes them: the CPU packages' through RAPL (the kernel's
// powercap interface, /sys/class/powercap/intel-rapl:N/energy_uj, which AMD's packages use too)
// and the GPUs' through NVML (libnvidia-ml.so.1, loaded at run time, so hoop-train needs no
// NVIDIA driver to build or run: nvmlDeviceGetTotalEnergyConsumption, millijoules since the
// driver loaded, Volta and later). Each counter covers the whole host, so one rank per host
// reads it (trainer.cc: local rank 0) and the job's figure is the sum over hosts.
//
// Never a made-up figure: a source that cannot be read says why (no powercap directory, a
// counter readable by root only, no NVML library, no GPU, a GPU without the counter), and the
// trainer reports "not available" with that reason.
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace hoop::train {

class EnergyMeter {
 public:
  // `powercap`: the powercap directory (a test may point it elsewhere); `nvml`: the NVML library
  // to load ("" tries none).
  explicit EnergyMeter(const std::string& powercap = "/sys/class/powercap",
                       const std::string& nvml = "libnvidia-ml.so.1");
  ~EnergyMeter();
  EnergyMeter(const EnergyMeter&) = delete;
  EnergyMeter& operator=(const EnergyMeter&) = delete;

  bool cpu() const { return !packages_.empty(); }
  bool gpu() const;
  const std::string& cpu_why() const { return cpu_why_; }  // why not, when !cpu()
  const std::string& gpu_why() const { return gpu_why_; }
  // Joules since this meter was made. Poll() at least once per counter wrap (RAPL's wraps after
  // max_energy_range_uj, minutes at full power on big packages): the trainer polls every step.
  void Poll();
  double CpuJoules();
  double GpuJoules();

 private:
  struct Package {
    std::string path;     // its energy_uj
    double range_uj = 0;  // max_energy_range_uj: where the counter wraps
    double last_uj = 0, total_uj = 0;
  };
  struct Nvml;  // the loaded library and its devices
  std::vector<Package> packages_;
  std::unique_ptr<Nvml> nvml_;
  std::string cpu_why_, gpu_why_;
};

}  // namespace hoop::train
