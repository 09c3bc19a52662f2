// Back-end selection as users meet it: hoop-info's report, HOOP_TRANSPORT naming a back end
// that is not there or cannot be used, and the shared-memory paths leaving nothing behind in
// /dev/shm, even when a rank is killed.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <set>

#include "common/device.h"
#include "tests/support/backends.h"
#include "tests/support/proc.h"

using namespace hoop::test;

TEST_CASE("hoop-info lists the back ends and what a job would pick", "[select]") {
  auto h = RunProc({Bin("hoop-info"), "--help"});
  CHECK(h.exit_code == 0);
  CHECK(h.output.find("usage: hoop-info") != std::string::npos);
  auto r = RunProc({Bin("hoop-info")}, Within(60));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  size_t shm = r.output.find("  shm "), ucx = r.output.find("  ucx "), ofi = r.output.find("  ofi "),
         tcp = r.output.find("  tcp ");
  REQUIRE(shm != std::string::npos);
  REQUIRE(ucx != std::string::npos);
  REQUIRE(ofi != std::string::npos);
  REQUIRE(tcp != std::string::npos);
  CHECK((shm < ucx && ucx < ofi && ofi < tcp));
  CHECK(r.output.find("UCX 1.") != std::string::npos);
  CHECK(r.output.find("tcp;ofi_rxm") != std::string::npos);
  CHECK(r.output.find("sockets (refused)") != std::string::npos);
  CHECK(r.output.find("to a rank on this host:    shm") != std::string::npos);
  CHECK(r.output.find("to a rank on another host: ucx") != std::string::npos);
  ProcOptions forced = Within(60);
  forced.env = {{"HOOP_TRANSPORT", "shm"}};
  auto f = RunProc({Bin("hoop-info")}, forced);
  INFO(f.output);
  CHECK(f.output.find("to a rank on another host: none") != std::string::npos);
  CHECK(f.output.find("shm: does not reach that host") != std::string::npos);
}

TEST_CASE("HOOP_LOG_LEVEL=debug says the back end per peer and the plan per call shape", "[select]") {
  ProcOptions o = Within(60);
  o.env = {{"HOOP_LOG_LEVEL", "debug"}};
  auto r = RunProc({Bin("hooprun"), "-np", "2", Bin("hoop-perf"), "allreduce", "-b", "4K", "-e", "4K", "-R", "1", "-n",
                    "2", "-w", "0"},
                   o);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("[0] hoop[rank 0] DEBUG: peer rank 1 (host ") != std::string::npos);
  CHECK(r.output.find("): back end shm, its address ") != std::string::npos);
  CHECK(r.output.find("rank 1: allreduce #") != std::string::npos);
  CHECK(r.output.find("1024 x f32, sum): new call shape: ") != std::string::npos);
  // info: one line per communicator, saying what it is and where to look for more.
  o.env = {{"HOOP_LOG_LEVEL", "info"}};
  auto i = RunProc({Bin("hooprun"), "-np", "2", Bin("hoop-perf"), "barrier", "-R", "1"}, o);
  CHECK(i.output.find("communicator 'world' up: 2 ranks over shm (the back ends in use), this rank at ") !=
        std::string::npos);
  CHECK(i.output.find("; rank 1, 2 on this host name (HOOP_LOG_LEVEL=debug: ") != std::string::npos);
  CHECK(i.output.find("new call shape") == std::string::npos);
}

TEST_CASE("HOOP_ALGO=hierarchical where the hosts are uneven says it runs the flat ring, once, from rank 0",
          "[select]") {
  ProcOptions o = Within(60);
  o.env = {{"HOOP_ALGO", "hierarchical"}};
  auto r = RunProc({Bin("hooprun"), "-np", "3", Bin("hoop-perf"), "allreduce", "-b", "1M", "-e", "1M", "-R", "1", "-n",
                    "2", "-w", "0"},
                   o);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  const std::string warn =
      "[0] hoop[rank 0] WARN: communicator 'world': HOOP_ALGO=hierarchical needs 2 or more hosts with "
      "the same number (2 or more) of ranks on each; ranks per host here: 3. Allreduce, allgather "
      "and reduce_scatter run the flat ring instead";
  CHECK(r.output.find(warn) != std::string::npos);
  CHECK(r.output.find("WARN: communicator") == r.output.rfind("WARN: communicator"));  // once
  // Asked for by name where it does apply, or not asked for: no warning.
  o.env = {{"HOOP_ALGO", "ring"}};
  auto flat =
      RunProc({Bin("hooprun"), "-np", "2", Bin("hoop-perf"), "allreduce", "-b", "1M", "-e", "1M", "-R", "1"}, o);
  CHECK(flat.exit_code == 0);
  CHECK(flat.output.find("HOOP_ALGO=hierarchical") == std::string::npos);
}

TEST_CASE("hoop-info says its version and kernels, and refuses a back end that is not built in", "[select]") {
  auto v = RunProc({Bin("hoop-info"), "--version"});
  CHECK(v.exit_code == 0);
  CHECK(v.output == "hoop-info (hoop) " HOOP_VERSION_STRING "\n");
  auto r = RunProc({Bin("hoop-info")}, Within(60));
  INFO(r.output);
  CHECK(r.output.find("hoop (hoop) " HOOP_VERSION_STRING "\n") != std::string::npos);
  // avx2 or avx512 wherever the CPU has AVX2 (this build compiles both), generic elsewhere.
  CHECK(r.output.find(__builtin_cpu_supports("avx2") ? "reduction kernels: avx" : "reduction kernels: generic") !=
        std::string::npos);
  // HOOP_KERNEL_ISA forces a narrower set (CI runs the suite so, scripts/isa-check.sh).
  ProcOptions generic = Within(60);
  generic.env = {{"HOOP_KERNEL_ISA", "generic"}};
  auto g = RunProc({Bin("hoop-info")}, generic);
  INFO(g.output);
  CHECK(g.output.find("reduction kernels: generic\n") != std::string::npos);
  if (__builtin_cpu_supports("avx2")) {
    ProcOptions avx2 = Within(60);
    avx2.env = {{"HOOP_KERNEL_ISA", "avx2"}};
    auto a = RunProc({Bin("hoop-info")}, avx2);
    CHECK(a.output.find("reduction kernels: avx2\n") != std::string::npos);
  }
  ProcOptions bogus = Within(60);
  bogus.env = {{"HOOP_TRANSPORT", "bogus"}};
  auto b = RunProc({Bin("hoop-info")}, bogus);
  INFO(b.output);
  CHECK(b.exit_code == 2);
  CHECK(b.output.find("HOOP_TRANSPORT=bogus: no such back end is built in (built in: shm, ucx, ofi, tcp)") !=
        std::string::npos);
}

TEST_CASE("hoop-info and kernel-bench --device cuda say what this machine has for CUDA", "[select][gpu]") {
  auto r = RunProc({Bin("hoop-info")}, Within(60));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  auto n = hoop::CudaDeviceCount();
  if (!hoop::BuiltWithCuda()) {
    CHECK(r.output.find("cuda: not built in (HOOP_WITH_CUDA=OFF)\n") != std::string::npos);
  } else {
    CHECK(r.output.find("cuda: built in (runtime ") != std::string::npos);
    if (n.ok())
      CHECK(r.output.find("  device 0: ") != std::string::npos);
    else
      CHECK(r.output.find("  no devices here: " + n.status().message() + "\n") != std::string::npos);
  }
  // UCX says whether it moves device memory itself (Debian's does not).
  if (r.output.find("  ucx  UCX ") != std::string::npos)
    CHECK(r.output.find("; CUDA-capable transports: ") != std::string::npos);
  // Without a device the benchmark refuses with the reason, at once; a bad device is a usage error.
  if (!n.ok()) {
    auto k = RunProc({Bin("kernel-bench"), "--device", "cuda", "--mib", "1"}, Within(30));
    INFO(k.output);
    CHECK(k.exit_code == 1);
    CHECK(k.output.find("kernel-bench: --device cuda: " + n.status().message()) != std::string::npos);
  }
  auto bad = RunProc({Bin("kernel-bench"), "--device", "gpu0"}, Within(30));
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("kernel-bench: --device 'gpu0': expected cpu, cuda or cuda:N") != std::string::npos);
}

TEST_CASE("HOOP_TRANSPORT naming an unusable back end is an error that says why", "[select]") {
  ProcOptions o = Within(60);
  o.env = {{"HOOP_TRANSPORT", "carrier-pigeon"}};
  auto r = RunProc({Bin("hooprun"), "-np", "2", Bin("hoop-perf"), "allreduce", "-b", "8", "-e", "8"}, o);
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK(r.output.find("HOOP_TRANSPORT=carrier-pigeon: no such back end is built in (built in: shm, ucx, ofi, tcp)") !=
        std::string::npos);
  o.env = {{"HOOP_TRANSPORT", "ofi"}, {"FI_PROVIDER", "sockets"}};
  auto s = RunProc({Bin("hooprun"), "-np", "2", Bin("hoop-perf"), "allreduce", "-b", "8", "-e", "8"}, o);
  INFO(s.output);
  CHECK(s.exit_code != 0);
  CHECK(s.output.find("HOOP_TRANSPORT=ofi is unavailable: ofi: libfabric's sockets provider hangs") !=
        std::string::npos);
}

// Every shared-memory path: hoop's shm (memfds: nothing is ever named), UCX's sm transports, and
// libfabric's shm provider, whose killed rank's region the survivors remove.
TEST_CASE("shared-memory back ends leave nothing in /dev/shm, also when a rank is killed", "[select][shm]") {
  for (const Backend& b : Backends()) {
    if (b.label != "shm" && b.label != "ucx/sm" && b.label != "ofi/shm") continue;
    DYNAMIC_SECTION(b.label) {
      std::set<std::string> before = DevShm();
      std::string marker = NewMarker();
      ProcOptions o = Within(60);
      o.env = b.env;
      o.env["HOOP_TIMEOUT"] = "30";
      auto r = RunProc({Bin("hooprun"), "-np", "4", Bin("hoop-test-rank"), "kill", "2", marker}, o);
      INFO(r.output);
      CHECK(r.output.find("killed by signal 9") != std::string::npos);
      CHECK(WaitGone(marker, 5) == 0);
      auto ok =
          RunProc({Bin("hooprun"), "-np", "3", Bin("hoop-perf"), "allreduce", "-b", "1M", "-e", "1M", "-c", "1"}, o);
      CHECK(ok.exit_code == 0);
      for (const auto& name : LeftInDevShm(before, 5)) FAIL_CHECK("left in /dev/shm, held by no process: " << name);
    }
  }
}

// UCX's posix shared memory makes a segment's file, writes it through and only then unlinks it: a
// rank killed in between leaves it. hooprun removes such a file after a rank was killed, and only
// such a one (tools/hooprun/shm_leftovers.h): one a live process holds, or one older than the job,
// stays. The rank here makes its file as UCX does (held open) and kills itself.
TEST_CASE("hooprun removes the file in /dev/shm a killed rank's UCX left, and no other", "[select][shm]") {
  const std::string marker = NewMarker(), tag = marker.substr(marker.rfind('-') + 1);
  const std::string left = "ucx_shm_posix_" + tag + "a", held = "ucx_shm_posix_" + tag + "b",
                    old = "ucx_shm_posix_" + tag + "c";
  auto path = [](const std::string& name) { return "/dev/shm/" + name; };
  const int held_fd = ::open(path(held).c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  REQUIRE(held_fd >= 0);
  const int old_fd = ::open(path(old).c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  REQUIRE(old_fd >= 0);
  ::close(old_fd);
  const timespec hour_ago[2] = {{::time(nullptr) - 3600, 0}, {::time(nullptr) - 3600, 0}};
  REQUIRE(::utimensat(AT_FDCWD, path(old).c_str(), hour_ago, 0) == 0);
  const std::string script = "if [ $HOOP_RANK = 1 ]; then exec 3<>" + path(left) + "; kill -9 $$; fi; sleep 1";
  auto r = RunProc({Bin("hooprun"), "-np", "2", "bash", "-c", script, marker}, Within(60));
  INFO(r.output);
  CHECK(r.exit_code == 137);
  CHECK(r.output.find("hooprun: removed /dev/shm/" + left + ", UCX's, which rank 1 (pid ") != std::string::npos);
  CHECK(::access(path(left).c_str(), F_OK) != 0);
  CHECK(::access(path(held).c_str(), F_OK) == 0);
  CHECK(::access(path(old).c_str(), F_OK) == 0);
  CHECK(r.output.find(held) == std::string::npos);
  CHECK(r.output.find(old) == std::string::npos);
  ::close(held_fd);
  ::unlink(path(held).c_str());
  ::unlink(path(old).c_str());
  CHECK(WaitGone(marker, 5) == 0);
}
