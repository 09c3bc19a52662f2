// The installed package, as a framework author uses it: `cmake --install` into a temporary
// prefix, then a C and a C++ program (tests/install/) built out of tree against that prefix,
// once with find_package(hoop) and once with pkg-config, and run under the installed hooprun.
// The programs must load the installed libhoop.so, not the build tree's.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/support/proc.h"

using namespace hoop::test;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "hoop-install-XXXXXX").string();
    if (::mkdtemp(t.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// A shell command, bounded; the build tree's library path is kept out of its environment.
ProcResult Sh(const std::string& cmd, double seconds, std::map<std::string, std::string> env = {}) {
  ProcOptions o = Within(seconds);
  o.env = std::move(env);
  o.unset = {"LD_LIBRARY_PATH", "PKG_CONFIG_PATH", "CMAKE_PREFIX_PATH"};
  return RunProc({"/bin/sh", "-c", cmd}, o);
}

void RunsUnderInstalledHooprun(const fs::path& prefix, const fs::path& program, const std::string& tag) {
  INFO(program.string());
  auto ldd = Sh("ldd " + program.string(), 30);
  INFO(ldd.output);
  const std::string arrow = "libhoop.so.0 => ";
  size_t at = ldd.output.find(arrow);
  REQUIRE(at != std::string::npos);
  at += arrow.size();
  const fs::path loaded = ldd.output.substr(at, ldd.output.find(' ', at) - at);
  CHECK(fs::equivalent(loaded, prefix / "lib" / "libhoop.so.0"));
  auto r = RunProc({(prefix / "bin" / "hooprun").string(), "-np", "3", program.string()}, Within(60));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  for (int k = 0; k < 3; ++k) CHECK(r.output.find(tag + " rank " + std::to_string(k) + " of 3: ") != std::string::npos);
  CHECK(r.output.find("WRONG") == std::string::npos);
}

}  // namespace

TEST_CASE("the installed package builds C and C++ programs with CMake and pkg-config, run by the installed hooprun",
          "[install]") {
  TempDir tmp;
  const fs::path prefix = tmp.path / "prefix";
  auto inst = RunProc({"/usr/bin/cmake", "--install", HOOP_BUILD_DIR, "--prefix", prefix.string()}, Within(120));
  INFO(inst.output);
  REQUIRE(inst.exit_code == 0);
  for (const char* f :
       {"include/hoop/hoop.h", "include/hoop/hoop.hpp", "lib/libhoop.so", "lib/libhoop_signals.so.0", "bin/hooprun",
        "bin/hoop-perf", "bin/hoop-info", "lib/cmake/hoop/hoopConfig.cmake", "lib/cmake/hoop/hoopConfigVersion.cmake",
        "lib/cmake/hoop/hoopTargets.cmake", "lib/pkgconfig/hoop.pc"})
    CHECK(fs::exists(prefix / f));
  // The installed tools run from the prefix alone.
  auto info = Sh((prefix / "bin" / "hoop-info").string() + " --version", 30);
  CHECK(info.exit_code == 0);
  CHECK(info.output.find(HOOP_VERSION_STRING) != std::string::npos);
  // hoop-train, where it is built, trains from the prefix alone under the installed hooprun.
  if (fs::exists(fs::path(HOOP_BUILD_DIR) / "bin" / "hoop-train")) {
    REQUIRE(fs::exists(prefix / "bin" / "hoop-train"));
    auto ldd = Sh("ldd " + (prefix / "bin" / "hoop-train").string(), 30);
    INFO(ldd.output);
    CHECK(ldd.output.find("not found") == std::string::npos);
    CHECK(ldd.output.find(std::string(HOOP_BUILD_DIR) + "/lib") == std::string::npos);
    auto train = Sh((prefix / "bin" / "hooprun").string() + " -np 2 " + (prefix / "bin" / "hoop-train").string() +
                        " --epochs 1 --train-limit 512 --test-limit 128",
                    120);
    INFO(train.output);
    CHECK(train.exit_code == 0);
    CHECK(train.output.find("hoop-train: done: lenet, 1 epoch(s)") != std::string::npos);
  }
  const std::string src = std::string(HOOP_SOURCE_DIR) + "/tests/install";

  SECTION("find_package(hoop)") {
    const fs::path b = tmp.path / "cmake-build";
    auto conf = Sh("cmake -S " + src + " -B " + b.string() + " -DCMAKE_PREFIX_PATH=" + prefix.string() +
                       " -DCMAKE_C_FLAGS='-Wall -Wextra -Werror' -DCMAKE_CXX_FLAGS='-Wall -Wextra -Werror'" +
                       " && cmake --build " + b.string(),
                   240);
    INFO(conf.output);
    REQUIRE(conf.exit_code == 0);
    RunsUnderInstalledHooprun(prefix, b / "consumer-c", "consumer-c");
    RunsUnderInstalledHooprun(prefix, b / "consumer-cxx", "consumer-cxx");
    // A version the package is not: refused by find_package, not a link error later.
    auto old = Sh("mkdir -p " + (tmp.path / "v").string() + " && cd " + (tmp.path / "v").string() +
                      " && printf 'cmake_minimum_required(VERSION 3.16)\\nproject(v C)\\nfind_package(hoop 9.0 "
                      "REQUIRED)\\n' > CMakeLists.txt && cmake -S . -B b -DCMAKE_PREFIX_PATH=" +
                      prefix.string(),
                  60);
    CHECK(old.exit_code != 0);
    CHECK(old.output.find("hoop") != std::string::npos);
    // A C-only project links hoop::hoop too: the C++20 it carries is for C++ sources alone.
    auto c_only = Sh("mkdir -p " + (tmp.path / "c").string() + " && cd " + (tmp.path / "c").string() + " && cp " + src +
                         "/consumer.c . && printf 'cmake_minimum_required(VERSION 3.16)\nproject(c C)\n"
                         "find_package(hoop 0.1 REQUIRED)\nadd_executable(c consumer.c)\n"
                         "target_link_libraries(c PRIVATE hoop::hoop)\n' > CMakeLists.txt && cmake -S . -B b "
                         "-DCMAKE_PREFIX_PATH=" +
                         prefix.string() + " && cmake --build b",
                     120);
    INFO(c_only.output);
    CHECK(c_only.exit_code == 0);
  }

  SECTION("pkg-config hoop") {
    std::map<std::string, std::string> env{{"PKG_CONFIG_PATH", (prefix / "lib" / "pkgconfig").string()}};
    auto ver = Sh("pkg-config --modversion hoop", 30, env);
    CHECK(ver.output.find(HOOP_VERSION_STRING) != std::string::npos);
    // The .pc file finds the prefix from where it lies: its libdir is the prefix's.
    auto dir = Sh("pkg-config --variable=libdir hoop", 30, env);
    CHECK(fs::equivalent(fs::path(dir.output.substr(0, dir.output.find('\n'))), prefix / "lib"));
    const std::string flags = "$(pkg-config --cflags --libs hoop) -Wl,-rpath,$(pkg-config --variable=libdir hoop)";
    const fs::path c = tmp.path / "pc-consumer-c", cxx = tmp.path / "pc-consumer-cxx";
    auto cc = Sh("cc -std=c11 -Wall -Wextra -Werror " + src + "/consumer.c -o " + c.string() + " " + flags, 120, env);
    INFO(cc.output);
    REQUIRE(cc.exit_code == 0);
    auto cpp =
        Sh("c++ -std=c++20 -Wall -Wextra -Werror " + src + "/consumer.cc -o " + cxx.string() + " " + flags, 120, env);
    INFO(cpp.output);
    REQUIRE(cpp.exit_code == 0);
    // Below C++20 (g++ 12's default is gnu++17), hoop.hpp says what it needs, not 20 errors.
    auto old = Sh("c++ -std=c++17 " + src + "/consumer.cc -o " + (tmp.path / "old").string() + " " + flags, 120, env);
    CHECK(old.exit_code != 0);
    CHECK(old.output.find("hoop/hoop.hpp needs C++20: compile with -std=c++20") != std::string::npos);
    CHECK(old.output.find("'std::span' has not been declared") == std::string::npos);
    RunsUnderInstalledHooprun(prefix, c, "consumer-c");
    RunsUnderInstalledHooprun(prefix, cxx, "consumer-cxx");
  }
}
