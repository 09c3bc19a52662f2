// Docs that match: every flag a tool reads (each alias, from its cli::Flags) is named in the
// usage text its --help prints, so no flag is hidden and none is renamed in one place only.
#include <catch2/catch.hpp>

#include <cctype>
#include <string>
#include <vector>

#include "perf/perf_options.h"
#include "perf/sub_options.h"
#include "tools/hooprun/options.h"

namespace hoop {
namespace {

bool NameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

// `name` as a word of `text`: not part of a longer flag (-n inside -np).
bool Names(const std::string& text, const std::string& name) {
  for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
    bool before = at == 0 || !NameChar(text[at - 1]);
    bool after = at + name.size() == text.size() || !NameChar(text[at + name.size()]);
    if (before && after) return true;
  }
  return false;
}

std::vector<std::string> Missing(const std::string& usage, const std::vector<std::string>& flags) {
  std::vector<std::string> missing;
  for (const std::string& f : flags)
    if (!Names(usage, f)) missing.push_back(f);
  return missing;
}

TEST_CASE("usage: hooprun --help names every flag it reads", "[cli]") {
  std::vector<std::string> flags = run::FlagNames();
  CHECK(flags.size() > 30);
  CHECK(Missing(run::kUsage, flags) == std::vector<std::string>{});
}

TEST_CASE("usage: hoop-perf --help, and its subcommands', name every flag they read", "[cli]") {
  CHECK(Missing(perf::kPerfUsage, perf::PerfFlagNames()) == std::vector<std::string>{});
  CHECK(Missing(perf::kFusionUsage, perf::FusionFlagNames()) == std::vector<std::string>{});
  CHECK(Missing(perf::kSendRecvUsage, perf::SendRecvFlagNames()) == std::vector<std::string>{});
}

}  // namespace
}  // namespace hoop
