// A rank's locality (locality.h): its binding from the kernel, its GPU from the CUDA runtime,
// both placed with hwloc's topology, written with nlohmann-json.
#include "common/locality.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/device.h"
#include "common/topology.h"

namespace hoop {
namespace {

std::vector<int> BoundCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

bool Meets(const std::vector<int>& a, const std::vector<int>& b) {
  return std::any_of(a.begin(), a.end(), [&](int x) { return std::find(b.begin(), b.end(), x) != b.end(); });
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

StatusOr<int> DefaultCudaDevice(int rank, int local_rank) {
  HOOP_ASSIGN_OR_RETURN(int n, CudaDeviceCount());
  if (n <= 0) return Unavailable("no CUDA device is visible to this process");
  return (local_rank >= 0 ? local_rank : rank) % n;
}

std::string LocalityJson(int rank, int local_rank, int local_size) {
  nlohmann::json j;
  j["rank"] = rank;
  j["local_rank"] = local_rank;
  j["local_size"] = local_size;
  char host[256] = {0};
  j["host"] = ::gethostname(host, sizeof host - 1) == 0 ? host : "?";
  const std::vector<int> bound = BoundCpus();
  j["bound_cpus"] = CpuList(bound);
  auto topo = LoadTopology(true);
  if (!topo.ok()) j["topology_why"] = topo.status().message();
  auto near = [&](const std::vector<int>& cpus) -> nlohmann::json {
    if (cpus.empty()) return nullptr;
    return Meets(cpus, bound);
  };
  // The GPU: the CUDA runtime's device, found among hwloc's by its PCI address.
  j["gpu"] = nullptr;
  auto dev = DefaultCudaDevice(rank, local_rank);
  auto devices = dev.ok() ? CudaDevices() : StatusOr<std::vector<CudaDevice>>(dev.status());
  if (!devices.ok()) {
    j["gpu_why"] = devices.status().message();
  } else {
    const CudaDevice& d = (*devices)[static_cast<size_t>(*dev)];
    nlohmann::json g{
        {"device", *dev}, {"name", d.name}, {"pci", Lower(d.pci_bus_id)}, {"near_cpus", nullptr}, {"near_me", nullptr}};
    if (topo.ok())
      for (const auto* t : Gpus(*topo))
        if (Lower(t->detail).rfind(Lower(d.pci_bus_id), 0) == 0) {
          if (!t->near.empty()) g["near_cpus"] = CpuList(t->near);
          g["near_me"] = near(t->near);
        }
    j["gpu"] = g;
  }
  j["nics"] = nlohmann::json::array();
  if (topo.ok())
    for (const auto& d : topo->devices) {
      if (d.kind != "nic") continue;
      j["nics"].push_back({{"name", d.name},
                           {"pci", d.detail},
                           {"near_cpus", d.near.empty() ? nlohmann::json(nullptr) : nlohmann::json(CpuList(d.near))},
                           {"near_me", near(d.near)}});
    }
  return j.dump();
}

}  // namespace hoop
