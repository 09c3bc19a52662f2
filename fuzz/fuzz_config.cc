// libFuzzer target: the configuration parser (common/config.h) and the parsers under it
// (common/parse.h). The input is lines of NAME=VALUE; a NAME of one byte picks one of the
// variables hoop knows, so the fuzzer spends its time on values. A parse either fails with a
// message naming the variable, or yields a configuration inside the documented bounds.
#include <cstdint>
#include <map>
#include <string>

#include "common/config.h"
#include "common/parse.h"

namespace {
const char* const kNames[] = {"HOOP_RANK",
                              "HOOP_SIZE",
                              "HOOP_LOCAL_RANK",
                              "HOOP_LOCAL_SIZE",
                              "HOOP_STORE",
                              "HOOP_JOB_TOKEN",
                              "HOOP_TIMEOUT",
                              "HOOP_ALGO",
                              "HOOP_TRANSPORT",
                              "HOOP_HOST",
                              "HOOP_CHUNK_BYTES",
                              "HOOP_WINDOW",
                              "HOOP_LOG_LEVEL",
                              "HOOP_COMPRESSION",
                              "HOOP_CYCLE_TIME_MS",
                              "HOOP_FUSION_THRESHOLD",
                              "HOOP_CACHE_CAPACITY",
                              "HOOP_STALL_WARNING_S",
                              "HOOP_TIMELINE",
                              "OMPI_COMM_WORLD_RANK",
                              "OMPI_COMM_WORLD_SIZE",
                              "SLURM_PROCID",
                              "SLURM_NTASKS",
                              "SLURM_LOCALID",
                              "HOOP_JOIN"};
constexpr size_t kNameCount = sizeof(kNames) / sizeof(kNames[0]);
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string> env;
  size_t at = 0;
  while (at <= text.size()) {
    size_t nl = text.find('\n', at);
    std::string line = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    size_t eq = line.find('=');
    if (eq != std::string::npos) {
      std::string name = line.substr(0, eq), value = line.substr(eq + 1);
      if (name.size() == 1) name = kNames[static_cast<unsigned char>(name[0]) % kNameCount];
      env[name] = value;
      (void)hoop::ParseSize(value);
      (void)hoop::ParseInt(value);
      (void)hoop::ParseSeconds(value);
      (void)hoop::ParseNonNegative(value);
    }
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  auto c = hoop::Config::FromEnv(env);
  if (!c.ok()) {
    if (c.status().message().empty()) __builtin_trap();
    return 0;
  }
  // The bounds config.h promises. A newcomer (HOOP_JOIN=1) with HOOP_RANK and no HOOP_SIZE has its
  // number in the job as its rank and a size of 1 (the grow that admits it gives both).
  const auto ms = c->timeout.count();
  const size_t chunk = c->chunk_bytes ? c->chunk_bytes : 512 * 1024;
  const bool rank_ok =
      c->join && c->size == 1 ? c->rank >= 0 && c->rank <= (1 << 20) : c->rank >= 0 && c->rank < c->size;
  if (c->size < 1 || !rank_ok || ms < 1 || ms > 7ll * 24 * 3600 * 1000 ||
      (c->chunk_bytes && (c->chunk_bytes < 4096 || c->chunk_bytes > (64u << 20))) || c->window < 1 || c->window > 256 ||
      chunk * c->window > (1u << 30) || c->stall_warning_s > 7 * 24 * 3600.0 || c->cycle_time_ms > 10000 ||
      c->fusion_threshold > (4ull << 30))
    __builtin_trap();
  return 0;
}
