// Two hosts for real: two network namespaces joined by a veth pair, one rank in each, started
// the way Slurm starts ranks (SLURM_PROCID/SLURM_NTASKS), rank 0 serving the tcp:// store on its
// own address. Each rank must find and advertise its own address (the route to the store), so
// no HOOP_HOST is given. Needs root and `ip netns`; skips, saying so, without them. The
// namespaces are removed whatever happens.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "tests/support/proc.h"

using namespace hoop::test;

namespace {
struct Netns {
  std::string a, b, prefix;
  bool ok = false;
  explicit Netns(int id) {
    a = "hoopA" + std::to_string(id);
    b = "hoopB" + std::to_string(id);
    prefix = "10.77." + std::to_string(id % 250);
    std::string va = "hva" + std::to_string(id), vb = "hvb" + std::to_string(id);
    std::string cmd = "ip netns add " + a + " && ip netns add " + b + " && ip link add " + va +
                      " type veth peer name " + vb + " && ip link set " + va + " netns " + a + " && ip link set " + vb +
                      " netns " + b + " && ip -n " + a + " addr add " + prefix + ".1/24 dev " + va + " && ip -n " + b +
                      " addr add " + prefix + ".2/24 dev " + vb + " && ip -n " + a + " link set " + va +
                      " up && ip -n " + b + " link set " + vb + " up && ip -n " + a + " link set lo up && ip -n " + b +
                      " link set lo up";
    ok = ::geteuid() == 0 && std::system((cmd + " 2>/dev/null").c_str()) == 0;
  }
  ~Netns() {
    std::string cmd = "ip netns del " + a + " 2>/dev/null; ip netns del " + b + " 2>/dev/null";
    [[maybe_unused]] const int rc = std::system(cmd.c_str());  // gone already is fine
  }
};
}  // namespace

TEST_CASE("two ranks on two hosts (network namespaces) find each other's addresses", "[env][netns]") {
  Netns net(static_cast<int>(::getpid() % 10000));
  if (!net.ok) {
    WARN("SKIPPED: cannot create network namespaces here (needs root and iproute2)");
    return;
  }
  const std::string store = "tcp://" + net.prefix + ".1:29517";
  std::vector<ProcResult> results(2);
  std::vector<std::thread> ranks;
  for (int k = 0; k < 2; ++k) {
    ranks.emplace_back([&, k] {
      ProcOptions o;
      o.timeout_s = 60;
      o.env = {{"SLURM_PROCID", std::to_string(k)},
               {"SLURM_NTASKS", "2"},
               {"SLURM_LOCALID", "0"},
               {"HOOP_STORE", store},
               {"HOOP_JOB_TOKEN", "two-hosts"},
               {"HOOP_TIMEOUT", "20"},
               {"HOOP_LOG_LEVEL", "info"},
               {"HOOP_TRANSPORT", "tcp"}};
      o.unset = {"HOOP_RANK", "HOOP_SIZE", "HOOP_HOST", "OMPI_COMM_WORLD_RANK"};
      results[static_cast<size_t>(k)] =
          RunProc({"/usr/sbin/ip", "netns", "exec", k == 0 ? net.a : net.b, Bin("hoop-c-api-test")}, o);
    });
  }
  for (auto& t : ranks) t.join();
  for (int k = 0; k < 2; ++k) {
    INFO(results[static_cast<size_t>(k)].output);
    CHECK(results[static_cast<size_t>(k)].exit_code == 0);
    CHECK(results[static_cast<size_t>(k)].output.find("c-api ok rank " + std::to_string(k) + " of 2") !=
          std::string::npos);
    // Each rank advertised its own end of the veth pair, found from the route to the store.
    CHECK(results[static_cast<size_t>(k)].output.find("this rank at " + net.prefix + "." + std::to_string(k + 1) +
                                                      ":") != std::string::npos);
  }
}

// Per-peer selection across hosts: two ranks in each namespace, each namespace with its own
// host name (a UTS namespace), so each pair on one "host" talks over shm and each pair across
// the veth link over a network back end (ucx first). Every rank's C API run checks the results.
TEST_CASE("two ranks on each of two hosts: shm inside a host, a network back end across", "[env][netns]") {
  Netns net(static_cast<int>((::getpid() + 5000) % 10000));
  if (!net.ok) {
    WARN("SKIPPED: cannot create network namespaces here (needs root and iproute2)");
    return;
  }
  const std::string store = "tcp://" + net.prefix + ".1:29518";
  std::vector<ProcResult> results(4);
  std::vector<std::thread> ranks;
  for (int k = 0; k < 4; ++k) {
    ranks.emplace_back([&, k] {
      ProcOptions o;
      o.timeout_s = 60;
      o.env = {{"SLURM_PROCID", std::to_string(k)},
               {"SLURM_NTASKS", "4"},
               {"SLURM_LOCALID", std::to_string(k % 2)},
               {"HOOP_STORE", store},
               {"HOOP_JOB_TOKEN", "two-by-two"},
               {"HOOP_TIMEOUT", "20"},
               {"HOOP_LOG_LEVEL", "info"}};
      o.unset = {"HOOP_RANK", "HOOP_SIZE",  "HOOP_HOST", "HOOP_TRANSPORT", "OMPI_COMM_WORLD_RANK",
                 "UCX_TLS",   "FI_PROVIDER"};
      const std::string host = k < 2 ? "hoop-host-a" : "hoop-host-b";
      results[static_cast<size_t>(k)] =
          RunProc({"/usr/sbin/ip", "netns", "exec", k < 2 ? net.a : net.b, "unshare", "--uts", "sh", "-c",
                   "hostname " + host + " && exec " + Bin("hoop-c-api-test")},
                  o);
    });
  }
  for (auto& t : ranks) t.join();
  for (int k = 0; k < 4; ++k) {
    INFO(results[static_cast<size_t>(k)].output);
    CHECK(results[static_cast<size_t>(k)].exit_code == 0);
    CHECK(results[static_cast<size_t>(k)].output.find("c-api ok rank " + std::to_string(k) + " of 4") !=
          std::string::npos);
    CHECK(results[static_cast<size_t>(k)].output.find("4 ranks over shm+ucx") != std::string::npos);
  }
}
