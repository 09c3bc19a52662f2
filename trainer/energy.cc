#include "trainer/energy.h"

#include <dirent.h>
#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace hoop::train {

namespace {

// The first line of a sysfs file, or "" with errno's text in *why.
std::string ReadLine(const std::string& path, std::string* why) {
  std::ifstream f(path);
  std::string line;
  if (!f || !std::getline(f, line)) {
    if (why) *why = path + ": " + (errno ? std::strerror(errno) : "empty");
    return "";
  }
  return line;
}

// A counter's text as a number, or -1 when it is not one (a sysfs file never should be).
double Number(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  return end != text.c_str() && v >= 0 ? v : -1;
}

}  // namespace

// NVML's C API, the few calls used, declared here so that building needs no NVIDIA header.
struct EnergyMeter::Nvml {
  void* lib = nullptr;
  using Device = void*;
  int (*shutdown)() = nullptr;
  int (*energy)(Device, unsigned long long*) = nullptr;  // millijoules
  std::vector<Device> devices;
  std::vector<unsigned long long> start_mj;
  ~Nvml() {
    if (shutdown) shutdown();
    if (lib) dlclose(lib);
  }
};

EnergyMeter::EnergyMeter(const std::string& powercap, const std::string& nvml) {
  // RAPL: the top-level zones (intel-rapl:N, not their sub-zones intel-rapl:N:M) are packages.
  if (DIR* d = opendir(powercap.c_str())) {
    std::vector<std::string> zones;
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.rfind("intel-rapl:", 0) == 0 && n.find(':', 11) == std::string::npos) zones.push_back(n);
    }
    closedir(d);
    std::sort(zones.begin(), zones.end());
    for (const std::string& z : zones) {
      const std::string dir = powercap + "/" + z;
      std::string why;
      errno = 0;
      const std::string now = ReadLine(dir + "/energy_uj", &why),
                        range = ReadLine(dir + "/max_energy_range_uj", nullptr);
      if (!now.empty() && Number(now) < 0) why = dir + "/energy_uj: '" + now + "' is not a counter";
      if (now.empty() || Number(now) < 0) {
        cpu_why_ = why + (errno == EACCES ? " (RAPL counters are readable by root only since Linux 5.10)" : "");
        packages_.clear();
        break;
      }
      Package p;
      p.path = dir + "/energy_uj";
      p.last_uj = Number(now);
      p.range_uj = std::max(0.0, Number(range));
      packages_.push_back(p);
    }
    if (zones.empty()) cpu_why_ = "no RAPL zones (intel-rapl:N) under " + powercap;
  } else {
    cpu_why_ = "no " + powercap + " (this kernel or virtual machine exposes no RAPL energy counters)";
  }

  if (nvml.empty()) {
    gpu_why_ = "not looked for";
    return;
  }
  auto n = std::make_unique<Nvml>();
  n->lib = dlopen(nvml.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!n->lib) {
    gpu_why_ = "NVML: " + nvml + " not found (no NVIDIA driver)";
    return;
  }
  auto init = reinterpret_cast<int (*)()>(dlsym(n->lib, "nvmlInit_v2"));
  auto count = reinterpret_cast<int (*)(unsigned*)>(dlsym(n->lib, "nvmlDeviceGetCount_v2"));
  auto handle = reinterpret_cast<int (*)(unsigned, Nvml::Device*)>(dlsym(n->lib, "nvmlDeviceGetHandleByIndex_v2"));
  n->energy = reinterpret_cast<int (*)(Nvml::Device, unsigned long long*)>(
      dlsym(n->lib, "nvmlDeviceGetTotalEnergyConsumption"));
  auto shutdown = reinterpret_cast<int (*)()>(dlsym(n->lib, "nvmlShutdown"));
  if (!init || !count || !handle || !n->energy || !shutdown) {
    gpu_why_ = "NVML: " + nvml + " lacks the energy calls";
    return;
  }
  if (int rc = init(); rc != 0) {
    gpu_why_ = "NVML: nvmlInit failed (" + std::to_string(rc) + ")";
    return;
  }
  n->shutdown = shutdown;
  unsigned devices = 0;
  if (count(&devices) != 0 || devices == 0) {
    gpu_why_ = "NVML: no GPUs";
    return;
  }
  for (unsigned i = 0; i < devices; ++i) {
    Nvml::Device dev = nullptr;
    unsigned long long mj = 0;
    if (handle(i, &dev) != 0 || n->energy(dev, &mj) != 0) {
      gpu_why_ = "NVML: GPU " + std::to_string(i) + " has no energy counter (it needs a Volta or later GPU)";
      return;
    }
    n->devices.push_back(dev);
    n->start_mj.push_back(mj);
  }
  nvml_ = std::move(n);
}

EnergyMeter::~EnergyMeter() = default;

bool EnergyMeter::gpu() const { return nvml_ != nullptr; }

void EnergyMeter::Poll() {
  for (Package& p : packages_) {
    const std::string now = ReadLine(p.path, nullptr);
    if (now.empty()) continue;
    const double uj = Number(now);
    if (uj < 0) continue;
    p.total_uj += uj >= p.last_uj ? uj - p.last_uj : uj + p.range_uj - p.last_uj;  // wrapped once
    p.last_uj = uj;
  }
}

double EnergyMeter::CpuJoules() {
  Poll();
  double uj = 0;
  for (const Package& p : packages_) uj += p.total_uj;
  return uj * 1e-6;
}

double EnergyMeter::GpuJoules() {
  if (!nvml_) return 0;
  double mj = 0;
  for (size_t i = 0; i < nvml_->devices.size(); ++i) {
    unsigned long long now = 0;
    if (nvml_->energy(nvml_->devices[i], &now) == 0) mj += static_cast<double>(now - nvml_->start_mj[i]);
  }
  return mj * 1e-3;
}

}  // namespace hoop::train
