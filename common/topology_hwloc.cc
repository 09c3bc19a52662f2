// common/topology.h over hwloc: packages, NUMA nodes, cores and processors, and the network and
// GPU devices with the processors nearest them (their closest non-I/O ancestor's).
#include <hwloc.h>
#if defined(__SANITIZE_ADDRESS__)
#define HOOP_LSAN_LOAD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HOOP_LSAN_LOAD 1
#endif
#endif
#ifdef HOOP_LSAN_LOAD
#include <sanitizer/lsan_interface.h>
#endif

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/topology.h"

namespace hoop {
namespace {

std::vector<int> CpusOf(hwloc_const_cpuset_t set) {
  std::vector<int> v;
  if (!set) return v;
  for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i)) v.push_back(i);
  return v;
}

std::string PciOf(hwloc_obj_t o) {
  while (o && o->type != HWLOC_OBJ_PCI_DEVICE) o = o->parent;
  if (!o) return "";
  char s[64];
  std::snprintf(s, sizeof s, "%04x:%02x:%02x.%x [%04x:%04x]", o->attr->pcidev.domain, o->attr->pcidev.bus,
                o->attr->pcidev.dev, o->attr->pcidev.func, o->attr->pcidev.vendor_id, o->attr->pcidev.device_id);
  return s;
}

std::vector<int> Near(hwloc_topology_t topo, hwloc_obj_t o) {
  hwloc_obj_t a = hwloc_get_non_io_ancestor_obj(topo, o);
  return a ? CpusOf(a->cpuset) : std::vector<int>{};
}

}  // namespace

bool BuiltWithHwloc() { return true; }

StatusOr<Topology> LoadTopology(bool devices) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return Internal(std::string("hwloc_topology_init: ") + std::strerror(errno));
  hwloc_topology_set_io_types_filter(topo, devices ? HWLOC_TYPE_FILTER_KEEP_IMPORTANT : HWLOC_TYPE_FILTER_KEEP_NONE);
  // hwloc's PCI discovery (libpciaccess) leaks a little, which LeakSanitizer would report in
  // every program that asks for devices: what is allocated while loading is not checked.
#ifdef HOOP_LSAN_LOAD
  if (devices) __lsan_disable();
#endif
  const int loaded = hwloc_topology_load(topo);
#ifdef HOOP_LSAN_LOAD
  if (devices) __lsan_enable();
#endif
  if (loaded != 0) {
    const int e = errno;
    hwloc_topology_destroy(topo);
    return Internal(std::string("hwloc_topology_load: ") + std::strerror(e));
  }
  Topology t;
  const std::pair<hwloc_obj_type_t, std::vector<Topology::Unit>*> kinds[] = {
      {HWLOC_OBJ_PACKAGE, &t.packages}, {HWLOC_OBJ_NUMANODE, &t.numa_nodes}, {HWLOC_OBJ_CORE, &t.cores}};
  for (auto [type, units] : kinds) {
    const int n = hwloc_get_nbobjs_by_type(topo, type);
    for (int i = 0; i < n; ++i)
      units->push_back({CpusOf(hwloc_get_obj_by_type(topo, type, static_cast<unsigned>(i))->cpuset)});
  }
  t.pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  for (hwloc_obj_t o = hwloc_get_next_osdev(topo, nullptr); o; o = hwloc_get_next_osdev(topo, o)) {
    const auto type = o->attr->osdev.type;
    const bool nic = type == HWLOC_OBJ_OSDEV_NETWORK || type == HWLOC_OBJ_OSDEV_OPENFABRICS;
    const bool gpu = type == HWLOC_OBJ_OSDEV_GPU || type == HWLOC_OBJ_OSDEV_COPROC;
    if (!nic && !gpu) continue;
    t.devices.push_back({nic ? "nic" : "gpu", o->name ? o->name : "?", PciOf(o), Near(topo, o)});
  }
  // GPUs hwloc knows only as PCI devices (no driver plugin): display and 3D controllers.
  for (hwloc_obj_t o = hwloc_get_next_pcidev(topo, nullptr); o; o = hwloc_get_next_pcidev(topo, o)) {
    const unsigned cls = o->attr->pcidev.class_id >> 8;
    if (cls != 0x03) continue;
    bool listed = false;
    for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) listed |= c->type == HWLOC_OBJ_OS_DEVICE;
    if (!listed) t.devices.push_back({"gpu", PciOf(o), PciOf(o), Near(topo, o)});
  }
  hwloc_topology_destroy(topo);
  return t;
}

}  // namespace hoop
