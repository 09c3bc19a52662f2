// Docs that match: every flag a tool reads (each alias, from its cli::Flags) is named in the
// usage text its --help prints, so no flag is hidden and none is renamed in one place only.
// (hoop-train's is in trainer_data_test.cc, which links the trainer.)
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "perf/perf_options.h"
#include "perf/sub_options.h"
#include "tests/support/usage_names.h"
#include "tools/hooprun/options.h"

namespace hoop {
namespace {

using testing::MissingFromUsage;

TEST_CASE("usage: hooprun --help names every flag it reads", "[cli]") {
  std::vector<std::string> flags = run::FlagNames();
  CHECK(flags.size() > 30);
  CHECK(MissingFromUsage(run::kUsage, flags) == std::vector<std::string>{});
}

TEST_CASE("usage: hoop-perf --help, and its subcommands', name every flag they read", "[cli]") {
  CHECK(MissingFromUsage(perf::kPerfUsage, perf::PerfFlagNames()) == std::vector<std::string>{});
  CHECK(MissingFromUsage(perf::kFusionUsage, perf::FusionFlagNames()) == std::vector<std::string>{});
  CHECK(MissingFromUsage(perf::kSendRecvUsage, perf::SendRecvFlagNames()) == std::vector<std::string>{});
  CHECK(MissingFromUsage(perf::kRecorderUsage, perf::RecorderFlagNames()) == std::vector<std::string>{});
}

}  // namespace
}  // namespace hoop
