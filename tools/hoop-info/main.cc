// hoop-info: what this build and this machine offer. Lists the back ends built in (in the
// order selection tries them), what each one sees here (library version, providers,
// devices), and which one a job started now would use for a peer on this host and for a peer
// on another host, honouring HOOP_TRANSPORT and the back ends' own variables (UCX_TLS,
// FI_PROVIDER). It creates each back end to find out, and connects to nothing. It also prints
// the version and the instruction set of the reduction kernels this CPU runs.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "collectives/kernels/reduce.h"
#include "common/cli.h"
#include "common/config.h"
#include "common/device.h"
#include "common/parse.h"
#include "common/topology.h"
#include "common/version.h"
#include "transport/transport.h"

namespace {

const char kUsage[] =
    "usage: hoop-info [-h|--help] [--version] [--topology]\n"
    "\n"
    "Prints the transport back ends built into this hoop, in the order per-peer selection\n"
    "tries them (shm, ucx, ofi, tcp), what each sees on this machine, and the back end a\n"
    "job started now would pick for a rank on this host and for a rank on another host.\n"
    "Honours HOOP_TRANSPORT (force one back end), UCX_TLS and FI_PROVIDER. Also prints hoop's\n"
    "version and the instruction set its reduction kernels use on this CPU (generic, avx2,\n"
    "avx512), and whether CUDA is built in: the devices it sees (PCI bus ids) and the pairs of\n"
    "devices between which local ranks can use CUDA IPC, or why there are none. Exits 2 when\n"
    "the settings are invalid (a HOOP_* variable, or HOOP_TRANSPORT naming a back end not\n"
    "built in).\n"
    "\n"
    "--topology prints this host as hwloc sees it instead: packages, NUMA nodes, cores and their\n"
    "processors, and the network and GPU devices with the processors nearest them (exit 1\n"
    "without hwloc).\n";

// The first back end (in priority order, or the forced one) that can be created here and
// reaches `peer` from `self`; or why none does.
std::string Choice(const std::vector<std::string>& names, const hoop::PeerInfo& self, const hoop::PeerInfo& peer) {
  std::string why;
  for (const auto& name : names) {
    hoop::TransportOptions o;
    o.rank = 0;
    o.size = 2;
    o.token = "hoop-info";
    o.comm = "hoop-info";
    o.peers = {self, peer};
    auto t = hoop::CreateTransport(name, o);
    if (!t.ok()) {
      why += "\n      " + name + ": " + t.status().message();
      continue;
    }
    if ((*t)->CanConnect(self, peer)) return (*t)->Label();
    why += "\n      " + name + ": does not reach that host";
  }
  return "none" + why;
}

// Whether this build has CUDA, and what it sees: the devices with their PCI bus ids, and how
// local ranks on each pair of devices (ranks take devices by local rank modulo the count) move
// device memory between them: CUDA IPC straight into the receiver's device where the pair has
// peer access (or is one device), else CUDA IPC mapped on the sender's device and copied over
// (transport/shm/channel.h); or staged through host memory where HOOP_CUDA_IPC=0.
void PrintCuda(bool ipc, size_t ipc_min_bytes) {
  if (!hoop::BuiltWithCuda()) {
    std::printf("cuda: not built in (HOOP_WITH_CUDA=OFF)\n");
    return;
  }
#ifdef HOOP_CUDA_ARCHS
  const char* archs = HOOP_CUDA_ARCHS;
#else
  const char* archs = "?";
#endif
  std::printf("cuda: built in (runtime %s, kernels for architectures %s)\n", hoop::CudaRuntimeVersion().c_str(), archs);
  auto devices = hoop::CudaDevices();
  if (!devices.ok()) {
    std::printf("  no devices here: %s\n", devices.status().message().c_str());
    return;
  }
  for (const hoop::CudaDevice& d : *devices)
    std::printf("  device %d: %s, PCI %s, %.1f GiB, sm_%d%d\n", d.ordinal, d.name.c_str(), d.pci_bus_id.c_str(),
                static_cast<double>(d.memory_bytes) / (1u << 30), d.cc_major, d.cc_minor);
  if (!ipc) {
    std::printf("  CUDA IPC between local ranks: off (HOOP_CUDA_IPC=0: device memory is staged through host memory)\n");
    return;
  }
  std::string direct, via;
  for (size_t a = 0; a < devices->size(); ++a)
    for (size_t b = a; b < devices->size(); ++b) {
      auto can = hoop::CudaPeerAccess(static_cast<int>(a), static_cast<int>(b));
      std::string& list = can.ok() && *can ? direct : via;
      list += (list.empty() ? "" : ", ") + std::to_string(a) + "-" + std::to_string(b);
    }
  std::printf("  CUDA IPC between local ranks on devices: %s\n", direct.empty() ? "none" : direct.c_str());
  if (ipc_min_bytes > 0)
    std::printf("  calls under %s stage through host memory instead (HOOP_CUDA_IPC_MIN_BYTES)\n",
                hoop::FormatBytes(ipc_min_bytes).c_str());
  if (!via.empty())
    std::printf("  CUDA IPC through the sender's device (no peer access: mapped there, then copied): %s\n",
                via.c_str());
}

// hoop-info --topology.
int PrintTopology() {
  auto t = hoop::LoadTopology(true);
  if (!t.ok()) {
    std::fprintf(stderr, "hoop-info: --topology: %s\n", t.status().message().c_str());
    return 1;
  }
  std::printf("topology: %zu package%s, %zu NUMA node%s, %zu core%s, %d processor%s\n", t->packages.size(),
              t->packages.size() == 1 ? "" : "s", t->numa_nodes.size(), t->numa_nodes.size() == 1 ? "" : "s",
              t->cores.size(), t->cores.size() == 1 ? "" : "s", t->pus, t->pus == 1 ? "" : "s");
  auto units = [](const char* what, const std::vector<hoop::Topology::Unit>& us) {
    for (size_t i = 0; i < us.size(); ++i)
      std::printf("  %s %zu: cpus %s\n", what, i, hoop::CpuList(us[i].cpus).c_str());
  };
  units("package", t->packages);
  units("numa", t->numa_nodes);
  units("core", t->cores);
  // The GPUs as ranks are placed by them: one per PCI device (hoop::Gpus).
  std::vector<const hoop::Topology::Device*> shown;
  for (const auto& d : t->devices)
    if (d.kind == "nic") shown.push_back(&d);
  for (const auto* g : hoop::Gpus(*t)) shown.push_back(g);
  if (shown.empty()) std::printf("  no network or GPU devices seen\n");
  for (const auto* d : shown)
    std::printf("  %s %s%s: near cpus %s\n", d->kind.c_str(), d->name.c_str(),
                d->detail.empty() || d->detail == d->name ? "" : (" (" + d->detail + ")").c_str(),
                d->near.empty() ? "unknown" : hoop::CpuList(d->near).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool help = false, version = false, topology = false;
  hoop::cli::Flags flags;
  flags.Early("-h,--help", &help);
  flags.Early("--version", &version);
  flags.Switch("--topology", &topology);
  if (hoop::Status s = flags.Parse(argc, argv); !s.ok()) {
    std::fprintf(stderr, "hoop-info: %s\n(run 'hoop-info --help' for usage)\n", s.message().c_str());
    return 2;
  }
  if (help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (version) {
    std::printf("%s\n", hoop::VersionLine("hoop-info").c_str());
    return 0;
  }
  if (topology) return PrintTopology();
  hoop::SetLogLevel(hoop::LogLevel::kError);
  auto cfg = hoop::Config::FromProcessEnv();
  if (!cfg.ok()) {
    std::fprintf(stderr, "hoop-info: %s\n", cfg.status().message().c_str());
    return 2;
  }
  std::vector<std::string> names = hoop::RegisteredTransports();
  if (!cfg->transport.empty() && std::find(names.begin(), names.end(), cfg->transport) == names.end()) {
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    std::fprintf(stderr, "hoop-info: HOOP_TRANSPORT=%s: no such back end is built in (built in: %s)\n",
                 cfg->transport.c_str(), known.c_str());
    return 2;
  }
  std::printf("%s\n", hoop::VersionLine("hoop").c_str());
  std::printf("reduction kernels: %s\n", hoop::KernelIsaName(hoop::BestKernelIsa()));
  PrintCuda(cfg->cuda_ipc, cfg->cuda_ipc_min_bytes);
  std::printf("hoop back ends built in (selection order):\n");
  for (const auto& name : names) {
    std::string d = hoop::DescribeTransport(name);
    std::printf("  %-4s %s\n", name.c_str(), d.empty() ? "" : d.c_str());
  }
  std::vector<std::string> order = names;
  if (!cfg->transport.empty()) {
    order = {cfg->transport};
    std::printf("HOOP_TRANSPORT=%s forces one back end for every peer\n", cfg->transport.c_str());
  }
  hoop::PeerInfo self{0, "this-host"}, local{1, "this-host"}, remote{1, "other-host"};
  std::printf("a job started now would use:\n");
  std::printf("  to a rank on this host:    %s\n", Choice(order, self, local).c_str());
  std::printf("  to a rank on another host: %s\n", Choice(order, self, remote).c_str());
  return 0;
}
