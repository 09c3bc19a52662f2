// This host's processors, memory and devices as hwloc sees them (Debian's libhwloc 2.9), and
// where hooprun binds its ranks (--bind-to). Built from topology_hwloc.cc where hwloc is found,
// else from topology_none.cc (every answer: built without hwloc).
//
// Binding: rank i of a host is placed on core i (round-robin over the cores) and bound to that
// core, or to the NUMA node or the package (socket) that holds it. On a host with GPUs, local
// rank i uses GPU i (mod their count) and is placed on the first free core nearest that GPU
// instead (hwloc's locality of its PCI device), so its binding is the GPU's side of the host. The default is the NUMA
// node
// (the package where hwloc sees none), and none when the host's ranks outnumber its cores. Not
// OpenMPI's core binding for up to 2 ranks: a hoop rank runs a worker thread beside its caller,
// and pinned to one core the two take turns (2 ranks on the CI machine, 8 B ping-pong: 0.21-0.45
// us and 0.002 GB/s bound to cores against 0.12-0.13 us and 0.009 GB/s bound to the NUMA node;
// docs/PERF.md). Binding more ranks than cores to cores is refused.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace hoop {

struct Topology {
  struct Unit {
    std::vector<int> cpus;  // the logical processors (OS numbering) it holds
  };
  struct Device {
    std::string kind;       // "nic" or "gpu"
    std::string name;       // "eth0", "ib0", "cuda0", or the PCI address
    std::string detail;     // PCI address and vendor/device ids, where known
    std::vector<int> near;  // the processors closest to it (its non-I/O ancestor's); empty: unknown
  };
  std::vector<Unit> packages, numa_nodes, cores;
  int pus = 0;
  std::vector<Device> devices;
};

// Whether this build has hwloc (HOOP_WITH_HWLOC).
bool BuiltWithHwloc();
// This host's topology (hwloc's), with the network and GPU devices when `devices` (their
// discovery scans PCI through hwloc's plugin, which leaks a little memory; sanitizer builds do
// not check what the load allocates). hooprun asks for devices only where a GPU driver is.
// Unimplemented without hwloc.
StatusOr<Topology> LoadTopology(bool devices);

// kHwthread: one hardware thread each (mpirun's hwthread): rank i on the first thread of core i,
// then, past the cores, on their second threads, and so on.
enum class BindTo { kDefault, kNone, kCore, kNuma, kSocket, kHwthread };
const char* BindToName(BindTo b);  // "default", "none", "core", "numa", "socket", "hwthread"
// The policy kDefault stands for with `ranks` ranks on this host.
BindTo DefaultBinding(const Topology& t, int ranks);
// The processors each of `ranks` local ranks is bound to (an empty set: not bound), under
// `policy` (kDefault resolved as above). Refuses core binding of more ranks than cores.
StatusOr<std::vector<std::vector<int>>> Bindings(const Topology& t, int ranks, BindTo policy);

// The host's GPUs, one per PCI device, in hwloc's order (local rank i's is i mod their count);
// devices without a PCI address only where no GPU has one.
std::vector<const Topology::Device*> Gpus(const Topology& t);

// "0-3,8,10-11"
std::string CpuList(const std::vector<int>& cpus);

}  // namespace hoop
