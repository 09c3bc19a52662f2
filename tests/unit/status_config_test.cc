#include <catch2/catch.hpp>

#include "collectives/api/communicator.h"
#include "collectives/device/pipelined_staging.h"
#include "common/config.h"
#include "common/parse.h"
#include "common/status.h"
#include "common/suggest.h"

using namespace hoop;

TEST_CASE("Status and StatusOr carry code and message", "[common]") {
  Status ok;
  CHECK(ok.ok());
  Status bad = Unavailable("lost peer 2");
  CHECK(bad.ToString() == "Unavailable: lost peer 2");
  CHECK(bad.WithContext("rank 0").message() == "rank 0: lost peer 2");
  StatusOr<int> v = 5;
  CHECK(v.ok());
  CHECK(*v == 5);
  StatusOr<int> e = InvalidArgument("x");
  CHECK(e.status().code() == Code::kInvalidArgument);
}

TEST_CASE("sizes parse with K/M/G suffixes", "[common]") {
  CHECK(*ParseSize("8") == 8);
  CHECK(*ParseSize("64K") == 65536);
  CHECK(*ParseSize("16M") == 16u << 20);
  CHECK(*ParseSize("1G") == 1u << 30);
  CHECK_FALSE(ParseSize("12Q"));
  CHECK_FALSE(ParseSize("-1"));
  CHECK_FALSE(ParseSize(""));
  CHECK(FormatBytes(64 << 20) == "64M");
}

TEST_CASE("Config reads hooprun, mpirun, Slurm and torchrun environments", "[common]") {
  auto c = Config::FromEnv({{"HOOP_RANK", "2"},
                            {"HOOP_SIZE", "4"},
                            {"HOOP_STORE", "tcp://127.0.0.1:1"},
                            {"HOOP_TIMEOUT", "2.5"},
                            {"HOOP_CHUNK_BYTES", "1M"},
                            {"HOOP_ALGO", "tree"}});
  REQUIRE(c.ok());
  CHECK(c->rank == 2);
  CHECK(c->size == 4);
  CHECK(c->launcher == Launcher::kHooprun);
  CHECK(c->timeout.count() == 2500);
  CHECK(c->chunk_bytes == 1u << 20);
  CHECK(c->algo == "tree");

  auto m = Config::FromEnv({{"OMPI_COMM_WORLD_RANK", "1"},
                            {"OMPI_COMM_WORLD_SIZE", "3"},
                            {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                            {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"}});
  REQUIRE(m.ok());
  CHECK(m->launcher == Launcher::kMpirun);
  CHECK(m->rank == 1);
  CHECK(m->local_size == 3);

  auto s = Config::FromEnv({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"}});
  REQUIRE(s.ok());
  CHECK(s->launcher == Launcher::kSlurm);
  CHECK(s->rank == 5);
  CHECK(s->local_rank == 1);

  // torchrun's: hoop's store one port above PyTorch's, unless HOOP_STORE names one.
  auto t = Config::FromEnv({{"RANK", "3"},
                            {"WORLD_SIZE", "4"},
                            {"LOCAL_RANK", "1"},
                            {"LOCAL_WORLD_SIZE", "2"},
                            {"MASTER_ADDR", "10.0.0.7"},
                            {"MASTER_PORT", "29500"}});
  REQUIRE(t.ok());
  CHECK(t->launcher == Launcher::kTorchrun);
  CHECK(t->rank == 3);
  CHECK(t->size == 4);
  CHECK(t->local_rank == 1);
  CHECK(t->local_size == 2);
  CHECK(t->store == "tcp://10.0.0.7:29501");
  auto t6 = Config::FromEnv(
      {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "::1"}, {"MASTER_PORT", "7"}, {"HOOP_JOB_TOKEN", "x"}});
  REQUIRE(t6.ok());
  CHECK(t6->store == "tcp://[::1]:8");
  auto own = Config::FromEnv({{"RANK", "0"},
                              {"WORLD_SIZE", "2"},
                              {"MASTER_ADDR", "h"},
                              {"MASTER_PORT", "7"},
                              {"HOOP_STORE", "file:///tmp/s"}});
  REQUIRE(own.ok());
  CHECK(own->store == "file:///tmp/s");
  auto bad_port = Config::FromEnv({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "65535"}});
  CHECK(bad_port.status().message().find("MASTER_PORT") != std::string::npos);
  // hooprun's variables win over the torchrun ones it also sets; RANK alone is no launcher.
  auto both = Config::FromEnv({{"HOOP_RANK", "1"}, {"HOOP_SIZE", "2"}, {"RANK", "1"}, {"WORLD_SIZE", "2"}});
  REQUIRE(both.ok());
  CHECK(both->launcher == Launcher::kHooprun);
  // Under `srun torchrun` (or torchrun inside mpirun) torchrun started this process: its ranks
  // win over Slurm's, which count hosts; without TORCHELASTIC_RUN_ID, Slurm's and mpirun's win.
  const std::map<std::string, std::string> srun = {
      {"SLURM_PROCID", "1"},         {"SLURM_NTASKS", "2"},        {"RANK", "5"},
      {"WORLD_SIZE", "8"},           {"LOCAL_RANK", "1"},          {"LOCAL_WORLD_SIZE", "4"},
      {"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}};
  auto outer = Config::FromEnv(srun);
  REQUIRE(outer.ok());
  CHECK(outer->launcher == Launcher::kMpirun);
  CHECK(outer->rank == 1);
  auto inner = srun;
  inner["TORCHELASTIC_RUN_ID"] = "job7";
  auto torchrun = Config::FromEnv(inner);
  REQUIRE(torchrun.ok());
  CHECK(torchrun->launcher == Launcher::kTorchrun);
  CHECK(torchrun->rank == 5);
  CHECK(torchrun->size == 8);
  CHECK(torchrun->local_rank == 1);
  CHECK(torchrun->local_size == 4);
  auto lone = Config::FromEnv({{"RANK", "1"}});
  REQUIRE(lone.ok());
  CHECK(lone->launcher == Launcher::kNone);

  auto none = Config::FromEnv({});
  REQUIRE(none.ok());
  CHECK(none->size == 1);
}

TEST_CASE("Config rejects bad values with the variable's name", "[common]") {
  auto bad_rank = Config::FromEnv({{"HOOP_RANK", "4"}, {"HOOP_SIZE", "4"}});
  CHECK(bad_rank.status().message().find("HOOP_RANK") != std::string::npos);
  auto typo = Config::FromEnv({{"HOOP_TIMEOUTS", "3"}});
  CHECK(typo.status().message().find("HOOP_TIMEOUTS") != std::string::npos);
  auto algo = Config::FromEnv({{"HOOP_ALGO", "fast"}});
  CHECK(algo.status().code() == Code::kInvalidArgument);
  auto t = Config::FromEnv({{"HOOP_TIMEOUT", "0"}});
  CHECK(t.status().message().find("HOOP_TIMEOUT") != std::string::npos);
  auto half = Config::FromEnv({{"HOOP_RANK", "0"}});
  CHECK_FALSE(half.ok());
  auto room = Config::FromEnv({{"HOOP_UNEXPECTED_BYTES", "16M"}});
  REQUIRE(room.ok());
  CHECK(room->unexpected_bytes == (16u << 20));
  CHECK(Config::FromEnv({}).value().unexpected_bytes == (64u << 20));
  for (const char* bad : {"1K", "2T", "lots"}) {
    auto b = Config::FromEnv({{"HOOP_UNEXPECTED_BYTES", bad}});
    CHECK(b.status().message().find("HOOP_UNEXPECTED_BYTES='" + std::string(bad) + "': expected a size in [4K, 1T]") ==
          0);
  }
}

TEST_CASE("an unknown HOOP_ variable names the nearest known one, or lists them all", "[config]") {
  auto typo = Config::FromEnv({{"HOOP_TIMOUT", "3"}});
  CHECK(typo.status().message() == "unknown variable HOOP_TIMOUT (did you mean HOOP_TIMEOUT?)");
  auto swapped = Config::FromEnv({{"HOOP_TRNASPORT", "tcp"}});
  CHECK(swapped.status().message() == "unknown variable HOOP_TRNASPORT (did you mean HOOP_TRANSPORT?)");
  auto far = Config::FromEnv({{"HOOP_GPU_DIRECT", "1"}});
  CHECK(far.status().message().find("unknown variable HOOP_GPU_DIRECT (known: HOOP_RANK, HOOP_SIZE,") == 0);
  for (const char* name : {"HOOP_LOCAL_SIZE", "HOOP_CROSS_RANK", "HOOP_CROSS_SIZE", "HOOP_STORE", "HOOP_CUDA_IPC",
                           "HOOP_TIMELINE", "HOOP_KERNEL_ISA)"})
    CHECK(far.status().message().find(name) != std::string::npos);
  CHECK(Nearest("sun", {"sum", "max"}) == "sum");
  CHECK(Nearest("xyz", {"sum", "max"}).empty());
  CHECK(Nearest("ALLREDUCE", {"allreduce"}) == "allreduce");
}

TEST_CASE("text from a peer is escaped before it is printed", "[status]") {
  CHECK(hoop::Escaped("plain text, unchanged") == "plain text, unchanged");
  CHECK(hoop::Escaped("a\nb\tc\rd") == "a\\nb\\tc\\rd");
  CHECK(hoop::Escaped(std::string("\x1b[31m\x7f\0x", 8)) == "\\x1b[31m\\x7f\\x00x");
  CHECK(hoop::Escaped(hoop::Escaped("a\nb")) == "a\\nb");  // escaping twice changes nothing more
}

TEST_CASE("settings beyond what the library can hold are refused, saying the bounds", "[config]") {
  struct Bad {
    const char* name;
    const char* value;
    const char* says;
  };
  for (const Bad& b :
       {Bad{"HOOP_TIMEOUT", "1e10", "604800"}, Bad{"HOOP_TIMEOUT", "inf", "604800"},
        Bad{"HOOP_TIMEOUT", "0.0001", "0.001"}, Bad{"HOOP_CHUNK_BYTES", "1G", "64M"}, Bad{"HOOP_WINDOW", "1024", "256"},
        Bad{"HOOP_STALL_WARNING_S", "1e12", "604800"}, Bad{"HOOP_STAGE_BYTES", "2G", "1G"},
        Bad{"HOOP_STAGE_BYTES", "lots", "[0, 1G]"}, Bad{"HOOP_STAGE_AHEAD", "2G", "1G"},
        Bad{"HOOP_STAGE_AHEAD", "-1", "[0, 1G]"}, Bad{"HOOP_CUDA_IPC_MIN_BYTES", "2G", "1G"},
        Bad{"HOOP_CUDA_IPC_MIN_BYTES", "small", "[0, 1G]"}}) {
    auto c = hoop::Config::FromEnv({{b.name, b.value}});
    INFO(b.name << "=" << b.value);
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().message().find(b.name) != std::string::npos);
    CHECK(c.status().message().find(b.says) != std::string::npos);
  }
  // Each alone in bounds, together too much staging memory.
  auto both = hoop::Config::FromEnv({{"HOOP_CHUNK_BYTES", "64M"}, {"HOOP_WINDOW", "32"}});
  REQUIRE_FALSE(both.ok());
  CHECK(both.status().message().find("at most 1G") != std::string::npos);
  auto fine = hoop::Config::FromEnv({{"HOOP_CHUNK_BYTES", "64M"}, {"HOOP_WINDOW", "16"}, {"HOOP_TIMEOUT", "604800"}});
  CHECK(fine.ok());
}

TEST_CASE("HOOP_STAGE_BYTES: the largest staging copy, 4M unless set, 0 allowed", "[config]") {
  auto none = Config::FromEnv({});
  REQUIRE(none.ok());
  CHECK(none->stage_bytes == size_t{4} << 20);
  CHECK(CommOptions::FromConfig(*none).stage_bytes == size_t{4} << 20);
  for (auto [text, bytes] :
       {std::pair{"0", size_t{0}}, std::pair{"16M", size_t{16} << 20}, std::pair{"1G", size_t{1} << 30}}) {
    auto c = Config::FromEnv({{"HOOP_STAGE_BYTES", text}});
    INFO(text);
    REQUIRE(c.ok());
    CHECK(CommOptions::FromConfig(*c).stage_bytes == bytes);
  }
}

TEST_CASE("HOOP_CUDA_IPC_MIN_BYTES: below it device buffers stage, 0 (IPC at every size) unless set", "[config]") {
  auto none = Config::FromEnv({});
  REQUIRE(none.ok());
  CHECK(CommOptions::FromConfig(*none).cuda_ipc_min_bytes == 0);
  for (auto [text, bytes] : {std::pair{"64K", size_t{64} << 10}, std::pair{"1M", size_t{1} << 20}}) {
    auto c = Config::FromEnv({{"HOOP_CUDA_IPC_MIN_BYTES", text}});
    INFO(text);
    REQUIRE(c.ok());
    CHECK(CommOptions::FromConfig(*c).cuda_ipc_min_bytes == bytes);
  }
}

TEST_CASE("HOOP_STAGE_AHEAD: how far the staging's copies in run ahead, 8M unless set", "[config]") {
  auto none = Config::FromEnv({});
  REQUIRE(none.ok());
  CHECK(CommOptions::FromConfig(*none).stage_ahead_bytes == size_t{8} << 20);
  CHECK(CommOptions::FromConfig(*none).stage_ahead_bytes == PipelinedStaging::kAheadBytes);
  for (auto [text, bytes] : {std::pair{"0", size_t{0}}, std::pair{"1G", size_t{1} << 30}}) {
    auto c = Config::FromEnv({{"HOOP_STAGE_AHEAD", text}});
    INFO(text);
    REQUIRE(c.ok());
    CHECK(CommOptions::FromConfig(*c).stage_ahead_bytes == bytes);
  }
}

TEST_CASE("HOOP_CROSS_RANK and HOOP_CROSS_SIZE (hooprun's) are read and bounded", "[config]") {
  auto c = Config::FromEnv({{"HOOP_CROSS_RANK", "1"}, {"HOOP_CROSS_SIZE", "2"}});
  REQUIRE(c.ok());
  CHECK(c->cross_rank == 1);
  CHECK(c->cross_size == 2);
  auto none = Config::FromEnv({});
  REQUIRE(none.ok());
  CHECK(none->cross_rank == -1);
  auto past = Config::FromEnv({{"HOOP_CROSS_RANK", "2"}, {"HOOP_CROSS_SIZE", "2"}});
  CHECK(past.status().message() == "HOOP_CROSS_RANK='2' is not an integer in [0, 1]");
}

TEST_CASE("HOOP_JOIN: a newcomer's HOOP_RANK is its number in the job, without HOOP_SIZE", "[config]") {
  auto c = Config::FromEnv({{"HOOP_JOIN", "1"}, {"HOOP_RANK", "7"}});
  REQUIRE(c.ok());
  CHECK(c->join);
  CHECK(c->rank == 7);
  CHECK(c->launcher == Launcher::kHooprun);
  auto alone = Config::FromEnv({{"HOOP_JOIN", "1"}});
  REQUIRE(alone.ok());
  CHECK(alone->join);
  CHECK(alone->launcher == Launcher::kNone);
  auto off = Config::FromEnv({{"HOOP_JOIN", "0"}, {"HOOP_RANK", "1"}, {"HOOP_SIZE", "2"}});
  REQUIRE(off.ok());
  CHECK_FALSE(off->join);
  CHECK(Config::FromEnv({{"HOOP_RANK", "7"}}).status().message() == "HOOP_RANK and HOOP_SIZE must be set together");
  CHECK(Config::FromEnv({{"HOOP_JOIN", "yes"}}).status().message() ==
        "HOOP_JOIN='yes': expected 1 (a newcomer to a running job) or 0");
}

TEST_CASE("HOOP_LOG_LEVEL in any case, with horovodrun's and mpirun's words", "[config]") {
  for (auto [text, level] : {std::pair{"INFO", hoop::LogLevel::kInfo}, std::pair{"Warning", hoop::LogLevel::kWarn},
                             std::pair{"WARN", hoop::LogLevel::kWarn}, std::pair{"warning", hoop::LogLevel::kWarn},
                             std::pair{"TRACE", hoop::LogLevel::kDebug}, std::pair{"DEBUG", hoop::LogLevel::kDebug},
                             std::pair{"error", hoop::LogLevel::kError}, std::pair{"FATAL", hoop::LogLevel::kError},
                             std::pair{"none", hoop::LogLevel::kNone}, std::pair{"OFF", hoop::LogLevel::kNone}}) {
    auto c = Config::FromEnv({{"HOOP_LOG_LEVEL", text}});
    INFO(text);
    REQUIRE(c.ok());
    CHECK(c->log_level == level);
  }
  auto bad = Config::FromEnv({{"HOOP_LOG_LEVEL", "loud"}});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("HOOP_LOG_LEVEL='loud': expected none, error, warn, info or debug") !=
        std::string::npos);
}

TEST_CASE("HOOP_KERNEL_ISA names an instruction set or auto", "[config]") {
  for (const char* ok : {"auto", "generic", "avx2", "avx512"}) {
    auto c = Config::FromEnv({{"HOOP_KERNEL_ISA", ok}});
    INFO(ok);
    REQUIRE(c.ok());
    CHECK(c->kernel_isa == ok);
  }
  auto bad = Config::FromEnv({{"HOOP_KERNEL_ISA", "sse"}});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("HOOP_KERNEL_ISA='sse': expected auto, generic, avx2 or avx512") !=
        std::string::npos);
}

TEST_CASE("HOOP_ALGO takes every algorithm the table names, flat and pairwise too", "[config]") {
  for (const std::string& name : hoop::AlgoNames()) {
    auto c = Config::FromEnv({{"HOOP_ALGO", name}});
    INFO(name);
    REQUIRE(c.ok());
    CHECK(CommOptions::FromConfig(*c).algo == hoop::ParseAlgo(name).value());
  }
}

TEST_CASE("HOOP_TRACE_OPS and HOOP_TRACE_DIR: the flight recorder's size and its dumps' directory", "[config]") {
  auto d = Config::FromEnv({});
  REQUIRE(d.ok());
  CHECK(d->trace_ops == 2000);  // on by default
  CHECK(d->trace_dir.empty());
  CHECK(CommOptions{}.trace_ops == 2000);
  CHECK(Config::FromEnv({{"HOOP_TRACE_OPS", "50"}})->trace_ops == 50);
  auto set = Config::FromEnv({{"HOOP_TRACE_OPS", "0"}, {"HOOP_TRACE_DIR", "/tmp/traces"}});
  REQUIRE(set.ok());
  CHECK((set->trace_ops == 0 && set->trace_dir == "/tmp/traces"));
  CHECK((CommOptions::FromConfig(*set).trace_ops == 0 && CommOptions::FromConfig(*set).trace_dir == "/tmp/traces"));
  auto bad = Config::FromEnv({{"HOOP_TRACE_OPS", "-1"}});
  CHECK(bad.status().message().find("HOOP_TRACE_OPS='-1'") == 0);
}
