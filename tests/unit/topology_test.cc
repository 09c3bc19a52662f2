// hooprun's binding policy (common/topology.h) on a made-up host of 2 packages x 2 NUMA nodes x
// 2 cores x 2 hardware threads: the defaults, every policy's sets, and the refusals.
#include <catch2/catch.hpp>

#include "common/topology.h"

using namespace hoop;

namespace {
Topology Host() {
  Topology t;
  t.pus = 16;
  for (int p = 0; p < 2; ++p)
    t.packages.push_back({{p * 8, p * 8 + 1, p * 8 + 2, p * 8 + 3, p * 8 + 4, p * 8 + 5, p * 8 + 6, p * 8 + 7}});
  for (int n = 0; n < 4; ++n) t.numa_nodes.push_back({{n * 4, n * 4 + 1, n * 4 + 2, n * 4 + 3}});
  for (int c = 0; c < 8; ++c) t.cores.push_back({{c * 2, c * 2 + 1}});
  return t;
}
}  // namespace

TEST_CASE("binding: the default, core, numa and socket sets, and what is refused", "[topology]") {
  const Topology t = Host();
  CHECK(DefaultBinding(t, 1) == BindTo::kNuma);  // never a core by default: see topology.h
  CHECK(DefaultBinding(t, 2) == BindTo::kNuma);
  CHECK(DefaultBinding(t, 3) == BindTo::kNuma);
  CHECK(DefaultBinding(t, 8) == BindTo::kNuma);
  CHECK(DefaultBinding(t, 9) == BindTo::kNone);  // more ranks than cores
  Topology flat = t;
  flat.numa_nodes.clear();
  CHECK(DefaultBinding(flat, 4) == BindTo::kSocket);

  auto core = Bindings(t, 3, BindTo::kCore);
  REQUIRE(core.ok());
  CHECK((*core)[2] == std::vector<int>{4, 5});
  auto numa = Bindings(t, 6, BindTo::kNuma);  // rank i on core i, bound to its NUMA node
  REQUIRE(numa.ok());
  CHECK((*numa)[1] == std::vector<int>{0, 1, 2, 3});
  CHECK((*numa)[2] == std::vector<int>{4, 5, 6, 7});
  CHECK((*numa)[5] == std::vector<int>{8, 9, 10, 11});
  auto socket = Bindings(t, 8, BindTo::kSocket);
  REQUIRE(socket.ok());
  CHECK((*socket)[3] == t.packages[0].cpus);
  CHECK((*socket)[4] == t.packages[1].cpus);
  auto threads = Bindings(t, 10, BindTo::kHwthread);  // first threads of the 8 cores, then second ones
  REQUIRE(threads.ok());
  CHECK((*threads)[0] == std::vector<int>{0});
  CHECK((*threads)[7] == std::vector<int>{14});
  CHECK((*threads)[8] == std::vector<int>{1});
  CHECK((*threads)[9] == std::vector<int>{3});
  auto too_many = Bindings(t, 17, BindTo::kHwthread);
  REQUIRE_FALSE(too_many.ok());
  CHECK(too_many.status().message().find("17 ranks on this host's 16 hardware threads") != std::string::npos);
  auto def = Bindings(t, 9, BindTo::kDefault);  // none: every set empty
  REQUIRE(def.ok());
  REQUIRE(def->size() == 9);
  CHECK((*def)[8].empty());
  auto over = Bindings(t, 9, BindTo::kCore);
  CHECK_FALSE(over.ok());
  CHECK(over.status().message() == "--bind-to core: 9 ranks on this host's 8 cores (bind to numa, socket or none)");
  auto numa_over = Bindings(t, 12, BindTo::kNuma);  // round-robin over the cores, so allowed
  REQUIRE(numa_over.ok());
  CHECK((*numa_over)[8] == t.numa_nodes[0].cpus);
}

// Two GPUs, one per package (a DRM card and its render node each, as hwloc lists them): local
// rank i uses GPU i mod 2 and sits on the first free core near it.
TEST_CASE("binding on a host with GPUs: each rank near its GPU", "[topology]") {
  Topology t = Host();
  t.devices.push_back({"nic", "eth0", "0000:01:00.0 [8086:1521]", t.packages[0].cpus});
  t.devices.push_back({"gpu", "card0", "0000:3b:00.0 [10de:2330]", t.packages[0].cpus});
  t.devices.push_back({"gpu", "renderD128", "0000:3b:00.0 [10de:2330]", t.packages[0].cpus});
  t.devices.push_back({"gpu", "card1", "0000:af:00.0 [10de:2330]", t.packages[1].cpus});
  // hwloc's OpenCL device where it could not find the PCI address (an H100 in a virtual machine
  // showed so): another name of one of the two, not a third GPU.
  t.devices.push_back({"gpu", "opencl1d0", "", {}});
  const auto gpus = Gpus(t);
  REQUIRE(gpus.size() == 2);
  CHECK(gpus[0]->name == "card0");
  CHECK(gpus[1]->name == "card1");
  auto core = Bindings(t, 4, BindTo::kCore);
  REQUIRE(core.ok());
  CHECK((*core)[0] == std::vector<int>{0, 1});  // GPU 0's package, its first core
  CHECK((*core)[1] == std::vector<int>{8, 9});  // GPU 1's package
  CHECK((*core)[2] == std::vector<int>{2, 3});  // GPU 0 again: the next free core near it
  CHECK((*core)[3] == std::vector<int>{10, 11});
  auto numa = Bindings(t, 2, BindTo::kNuma);
  REQUIRE(numa.ok());
  CHECK((*numa)[1] == t.numa_nodes[2].cpus);  // not core 1's node: GPU 1's
  // More ranks near one GPU than it has cores: the rest take free cores elsewhere, never one
  // already taken.
  Topology one = Host();
  one.devices.push_back({"gpu", "card0", "0000:3b:00.0", t.numa_nodes[0].cpus});
  auto crowd = Bindings(one, 3, BindTo::kCore);
  REQUIRE(crowd.ok());
  CHECK((*crowd)[0] == std::vector<int>{0, 1});
  CHECK((*crowd)[1] == std::vector<int>{2, 3});
  CHECK((*crowd)[2] == std::vector<int>{4, 5});  // node 0 has two cores: the first free one after
  // Only devices without a PCI address: those are the GPUs.
  Topology bare = Host();
  bare.devices.push_back({"gpu", "opencl0d0", "", {}});
  REQUIRE(Gpus(bare).size() == 1);
  CHECK(Gpus(bare)[0]->name == "opencl0d0");
  // No GPUs: rank i on core i, as before.
  auto plain = Bindings(Host(), 2, BindTo::kNuma);
  REQUIRE(plain.ok());
  CHECK((*plain)[1] == Host().numa_nodes[0].cpus);
}

TEST_CASE("processor lists are written as ranges", "[topology]") {
  CHECK(CpuList({}).empty());
  CHECK(CpuList({3}) == "3");
  CHECK(CpuList({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11");
  CHECK(CpuList({5, 4, 1}) == "1,4-5");
}
