// common/topology.h's policy part, the same with or without hwloc: default bindings and the
// processor sets each rank gets.
#include <algorithm>
#include <optional>

#include "common/topology.h"

namespace hoop {

const char* BindToName(BindTo b) {
  switch (b) {
    case BindTo::kDefault: return "default";
    case BindTo::kNone: return "none";
    case BindTo::kCore: return "core";
    case BindTo::kNuma: return "numa";
    case BindTo::kSocket: return "socket";
    case BindTo::kHwthread: return "hwthread";
  }
  return "?";
}

BindTo DefaultBinding(const Topology& t, int ranks) {
  if (t.cores.empty() || ranks > static_cast<int>(t.cores.size())) return BindTo::kNone;
  return t.numa_nodes.empty() ? BindTo::kSocket : BindTo::kNuma;
}

namespace {
// The unit of `units` that holds processor `cpu` (the last one if none does).
const Topology::Unit* Holding(const std::vector<Topology::Unit>& units, int cpu) {
  for (const Topology::Unit& u : units)
    if (std::find(u.cpus.begin(), u.cpus.end(), cpu) != u.cpus.end()) return &u;
  return nullptr;
}
}  // namespace

std::vector<const Topology::Device*> Gpus(const Topology& t) {
  // One GPU may show as several devices (a DRM card and its render node): one per PCI address.
  // A device without one (hwloc's OpenCL device where it could not place it, as in a virtual
  // machine) is another name of a GPU that has one; only where none has are those listed.
  std::vector<const Topology::Device*> out, unplaced;
  for (const auto& d : t.devices) {
    if (d.kind != "gpu") continue;
    const std::string pci = d.detail.substr(0, d.detail.find(' '));
    if (pci.empty()) {
      unplaced.push_back(&d);
      continue;
    }
    bool seen = false;
    for (const auto* g : out) seen |= g->detail.substr(0, g->detail.find(' ')) == pci;
    if (!seen) out.push_back(&d);
  }
  return out.empty() ? unplaced : out;
}

namespace {
// The core each rank is placed on: core i for rank i, or, on a host with GPUs, the first core
// near rank i's GPU (GPU i mod count) that no rank before it took, else the first free core
// anywhere, else (more ranks than cores) round-robin.
std::vector<size_t> HomeCores(const Topology& t, int ranks) {
  std::vector<size_t> home(static_cast<size_t>(std::max(ranks, 0)));
  const auto gpus = Gpus(t);
  std::vector<bool> taken(t.cores.size(), false);
  for (int r = 0; r < ranks; ++r) {
    size_t pick = static_cast<size_t>(r) % t.cores.size();
    if (!gpus.empty()) {
      const auto& near = gpus[static_cast<size_t>(r) % gpus.size()]->near;
      auto is_near = [&](size_t c) {
        const auto& cpus = t.cores[c].cpus;
        return !cpus.empty() && std::find(near.begin(), near.end(), cpus.front()) != near.end();
      };
      std::optional<size_t> free_near, free_any;
      for (size_t c = 0; c < t.cores.size(); ++c) {
        if (taken[c]) continue;
        if (!free_any) free_any = c;
        if (!free_near && is_near(c)) free_near = c;
      }
      pick = free_near ? *free_near : free_any ? *free_any : pick;
    }
    taken[pick] = true;
    home[static_cast<size_t>(r)] = pick;
  }
  return home;
}
}  // namespace

namespace {
// Every hardware thread, first threads of every core first, then second threads, ...: where
// --bind-to hwthread puts rank 0, 1, 2, ...
std::vector<int> ThreadsInOrder(const Topology& t) {
  std::vector<int> order;
  size_t most = 0;
  for (const Topology::Unit& c : t.cores) most = std::max(most, c.cpus.size());
  for (size_t k = 0; k < most; ++k)
    for (const Topology::Unit& c : t.cores)
      if (k < c.cpus.size()) order.push_back(c.cpus[k]);
  return order;
}
}  // namespace

StatusOr<std::vector<std::vector<int>>> Bindings(const Topology& t, int ranks, BindTo policy) {
  if (policy == BindTo::kDefault) policy = DefaultBinding(t, ranks);
  std::vector<std::vector<int>> out(static_cast<size_t>(std::max(ranks, 0)));
  if (policy == BindTo::kNone) return out;
  if (t.cores.empty())
    return FailedPrecondition("--bind-to " + std::string(BindToName(policy)) + ": hwloc found no cores");
  if (policy == BindTo::kHwthread) {
    const std::vector<int> threads = ThreadsInOrder(t);
    if (ranks > static_cast<int>(threads.size()))
      return InvalidArgument("--bind-to hwthread: " + std::to_string(ranks) + " ranks on this host's " +
                             std::to_string(threads.size()) + " hardware threads (bind to numa, socket or none)");
    for (int r = 0; r < ranks; ++r) out[static_cast<size_t>(r)] = {threads[static_cast<size_t>(r)]};
    return out;
  }
  if (policy == BindTo::kCore && ranks > static_cast<int>(t.cores.size()))
    return InvalidArgument("--bind-to core: " + std::to_string(ranks) + " ranks on this host's " +
                           std::to_string(t.cores.size()) + " cores (bind to numa, socket or none)");
  const auto home = HomeCores(t, ranks);
  for (int r = 0; r < ranks; ++r) {
    const Topology::Unit& core = t.cores[home[static_cast<size_t>(r)]];
    const int first = core.cpus.empty() ? -1 : core.cpus.front();
    const Topology::Unit* unit = &core;
    if (policy == BindTo::kNuma) unit = Holding(t.numa_nodes, first);
    if (policy == BindTo::kSocket || (policy == BindTo::kNuma && !unit)) unit = Holding(t.packages, first);
    out[static_cast<size_t>(r)] = unit ? unit->cpus : core.cpus;
  }
  return out;
}

std::string CpuList(const std::vector<int>& cpus) {
  std::vector<int> c = cpus;
  std::sort(c.begin(), c.end());
  std::string s;
  for (size_t i = 0; i < c.size();) {
    size_t j = i;
    while (j + 1 < c.size() && c[j + 1] == c[j] + 1) ++j;
    if (!s.empty()) s += ',';
    s += std::to_string(c[i]);
    if (j > i) {
      s += '-';
      s += std::to_string(c[j]);
    }
    i = j + 1;
  }
  return s;
}

}  // namespace hoop
