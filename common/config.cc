#include "common/config.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>
#include <vector>

#include "common/parse.h"
#include "common/suggest.h"

extern char** environ;

namespace hoop {

const char* LauncherName(Launcher l) {
  switch (l) {
    case Launcher::kNone: return "none";
    case Launcher::kHooprun: return "hooprun";
    case Launcher::kMpirun: return "mpirun";
    case Launcher::kSlurm: return "slurm";
    case Launcher::kTorchrun: return "torchrun";
  }
  return "?";
}

namespace {

constexpr double kMaxSeconds = 7 * 24 * 3600;          // HOOP_TIMEOUT, HOOP_STALL_WARNING_S
constexpr size_t kMaxChunkBytes = size_t{64} << 20;     // HOOP_CHUNK_BYTES
constexpr size_t kLargestDefaultChunk = 16 << 20;       // the back ends' own (shm on a GPU host)
constexpr size_t kMaxStagingBytes = size_t{1} << 30;    // HOOP_CHUNK_BYTES x HOOP_WINDOW

const std::vector<std::string> kKnown = {
    "HOOP_RANK", "HOOP_SIZE", "HOOP_LOCAL_RANK", "HOOP_LOCAL_SIZE", "HOOP_STORE",
    "HOOP_JOB_TOKEN", "HOOP_TIMEOUT", "HOOP_ALGO", "HOOP_TRANSPORT", "HOOP_HOST",
    "HOOP_CHUNK_BYTES", "HOOP_WINDOW", "HOOP_STAGE_BYTES", "HOOP_STAGE_AHEAD", "HOOP_LOG_LEVEL", "HOOP_COMPRESSION", "HOOP_CYCLE_TIME_MS",
    "HOOP_FUSION_THRESHOLD", "HOOP_CACHE_CAPACITY", "HOOP_STALL_WARNING_S", "HOOP_TIMELINE",
    "HOOP_UNEXPECTED_BYTES", "HOOP_CROSS_RANK", "HOOP_CROSS_SIZE", "HOOP_CUDA_IPC", "HOOP_KERNEL_ISA"};

class Reader {
 public:
  explicit Reader(const std::map<std::string, std::string>& env) : env_(env) {}
  const std::string* Get(const std::string& k) const {
    auto it = env_.find(k);
    return it == env_.end() ? nullptr : &it->second;
  }
  Status Int(const std::string& k, int* out, int64_t lo, int64_t hi) const {
    const std::string* v = Get(k);
    if (!v) return Status::Ok();
    auto n = ParseInt(*v);
    if (!n || *n < lo || *n > hi)
      return InvalidArgument(k + "='" + *v + "' is not an integer in [" + std::to_string(lo) +
                             ", " + std::to_string(hi) + "]");
    *out = static_cast<int>(*n);
    return Status::Ok();
  }

 private:
  const std::map<std::string, std::string>& env_;
};

}  // namespace

StatusOr<Config> Config::FromEnv(const std::map<std::string, std::string>& env) {
  Config c;
  Reader r(env);
  for (const auto& [k, v] : env)
    if (k.rfind("HOOP_", 0) == 0 && std::find(kKnown.begin(), kKnown.end(), k) == kKnown.end()) {
      if (std::string near = Nearest(k, kKnown); !near.empty())
        return InvalidArgument("unknown variable " + k + " (did you mean " + near + "?)");
      std::string all;
      for (const auto& n : kKnown) all += (all.empty() ? "" : ", ") + n;
      return InvalidArgument("unknown variable " + k + " (known: " + all + ")");
    }

  // Rank and size: hooprun's own variables win, then mpirun's, then Slurm's.
  if (r.Get("HOOP_RANK") || r.Get("HOOP_SIZE")) {
    if (!r.Get("HOOP_RANK") || !r.Get("HOOP_SIZE"))
      return InvalidArgument("HOOP_RANK and HOOP_SIZE must be set together");
    c.launcher = Launcher::kHooprun;
    HOOP_RETURN_IF_ERROR(r.Int("HOOP_SIZE", &c.size, 1, 1 << 20));
    HOOP_RETURN_IF_ERROR(r.Int("HOOP_RANK", &c.rank, 0, c.size - 1));
  } else if (r.Get("OMPI_COMM_WORLD_RANK")) {
    c.launcher = Launcher::kMpirun;
    HOOP_RETURN_IF_ERROR(r.Int("OMPI_COMM_WORLD_SIZE", &c.size, 1, 1 << 20));
    HOOP_RETURN_IF_ERROR(r.Int("OMPI_COMM_WORLD_RANK", &c.rank, 0, c.size - 1));
    HOOP_RETURN_IF_ERROR(r.Int("OMPI_COMM_WORLD_LOCAL_RANK", &c.local_rank, 0, 1 << 20));
    HOOP_RETURN_IF_ERROR(r.Int("OMPI_COMM_WORLD_LOCAL_SIZE", &c.local_size, 1, 1 << 20));
  } else if (r.Get("SLURM_PROCID")) {
    c.launcher = Launcher::kSlurm;
    HOOP_RETURN_IF_ERROR(r.Int("SLURM_NTASKS", &c.size, 1, 1 << 20));
    HOOP_RETURN_IF_ERROR(r.Int("SLURM_PROCID", &c.rank, 0, c.size - 1));
    HOOP_RETURN_IF_ERROR(r.Int("SLURM_LOCALID", &c.local_rank, 0, 1 << 20));
  } else if (r.Get("RANK") && r.Get("WORLD_SIZE")) {
    // torchrun's (also torch.distributed's env:// convention): its store at MASTER_PORT belongs
    // to PyTorch, so hoop's, served by rank 0, is at the next port unless HOOP_STORE says.
    c.launcher = Launcher::kTorchrun;
    HOOP_RETURN_IF_ERROR(r.Int("WORLD_SIZE", &c.size, 1, 1 << 20));
    HOOP_RETURN_IF_ERROR(r.Int("RANK", &c.rank, 0, c.size - 1));
    HOOP_RETURN_IF_ERROR(r.Int("LOCAL_RANK", &c.local_rank, 0, 1 << 20));
    HOOP_RETURN_IF_ERROR(r.Int("LOCAL_WORLD_SIZE", &c.local_size, 1, 1 << 20));
    const std::string* addr = r.Get("MASTER_ADDR");
    if (addr && r.Get("MASTER_PORT") && !r.Get("HOOP_STORE")) {
      int port = 0;
      HOOP_RETURN_IF_ERROR(r.Int("MASTER_PORT", &port, 1, 65534));
      const bool v6 = addr->find(':') != std::string::npos;
      c.store = "tcp://" + (v6 ? "[" + *addr + "]" : *addr) + ":" + std::to_string(port + 1);
    }
  }
  HOOP_RETURN_IF_ERROR(r.Int("HOOP_LOCAL_RANK", &c.local_rank, 0, 1 << 20));
  HOOP_RETURN_IF_ERROR(r.Int("HOOP_LOCAL_SIZE", &c.local_size, 1, 1 << 20));
  HOOP_RETURN_IF_ERROR(r.Int("HOOP_CROSS_SIZE", &c.cross_size, 1, 1 << 20));
  HOOP_RETURN_IF_ERROR(r.Int("HOOP_CROSS_RANK", &c.cross_rank, 0, (c.cross_size > 0 ? c.cross_size : 1 << 20) - 1));

  if (auto* v = r.Get("HOOP_STORE")) c.store = *v;
  if (auto* v = r.Get("HOOP_JOB_TOKEN")) c.token = *v;
  if (auto* v = r.Get("HOOP_TRANSPORT")) c.transport = *v;
  if (auto* v = r.Get("HOOP_HOST")) c.host = *v;
  if (auto* v = r.Get("HOOP_TIMEOUT")) {
    // Bounded so that every deadline (now + timeout, in nanoseconds) is representable.
    auto s = ParseSeconds(*v);
    if (!s || *s < 0.001 || *s > kMaxSeconds)
      return InvalidArgument("HOOP_TIMEOUT='" + *v + "': expected seconds in [0.001, 604800] (a week)");
    c.timeout = std::chrono::milliseconds(static_cast<long long>(*s * 1000));
  }
  if (auto* v = r.Get("HOOP_ALGO")) {
    // Every name of collectives/algo.h (common/ cannot include it; the unit test checks they agree).
    static const std::set<std::string> algos = {"auto",     "ring",     "tree", "doubling",     "chain",
                                                "binomial", "flat",     "pairwise", "dissemination", "hierarchical"};
    if (!algos.count(*v))
      return InvalidArgument("HOOP_ALGO='" + *v +
                             "': expected auto, ring, tree, doubling, chain, binomial, flat, pairwise, dissemination "
                             "or hierarchical");
    c.algo = *v;
  }
  if (auto* v = r.Get("HOOP_CHUNK_BYTES")) {
    auto b = ParseSize(*v);
    if (!b || *b < 4096 || *b > kMaxChunkBytes)
      return InvalidArgument("HOOP_CHUNK_BYTES='" + *v + "': expected a size in [4K, 64M]");
    c.chunk_bytes = *b;
  }
  if (r.Get("HOOP_WINDOW")) {
    int w = 0;
    HOOP_RETURN_IF_ERROR(r.Int("HOOP_WINDOW", &w, 1, 256));
    c.window = static_cast<size_t>(w);
  }
  // Every communicator keeps `window` staging chunks (more while compressed sends are in flight).
  const size_t chunk = c.chunk_bytes ? c.chunk_bytes : kLargestDefaultChunk;
  if (chunk * c.window > kMaxStagingBytes)
    return InvalidArgument("HOOP_CHUNK_BYTES x HOOP_WINDOW = " + FormatBytes(chunk) + " x " + std::to_string(c.window) +
                           " bytes of staging per communicator; at most 1G");
  if (auto* v = r.Get("HOOP_STAGE_BYTES")) {
    auto b = ParseSize(*v);
    if (!b || *b > kMaxStagingBytes) return InvalidArgument("HOOP_STAGE_BYTES='" + *v + "': expected a size in [0, 1G]");
    c.stage_bytes = *b;
  }
  if (auto* v = r.Get("HOOP_STAGE_AHEAD")) {
    auto b = ParseSize(*v);
    if (!b || *b > kMaxStagingBytes) return InvalidArgument("HOOP_STAGE_AHEAD='" + *v + "': expected a size in [0, 1G]");
    c.stage_ahead_bytes = *b;
  }
  if (auto* v = r.Get("HOOP_COMPRESSION")) {
    if (*v != "none" && *v != "fp16" && *v != "bf16" && *v != "auto")
      return InvalidArgument("HOOP_COMPRESSION='" + *v + "': expected none, fp16, bf16 or auto");
    c.compression = *v;
  }
  if (auto* v = r.Get("HOOP_UNEXPECTED_BYTES")) {
    auto b = ParseSize(*v);
    if (!b || *b < 4096 || *b > (size_t{1} << 40))
      return InvalidArgument("HOOP_UNEXPECTED_BYTES='" + *v + "': expected a size in [4K, 1T]");
    c.unexpected_bytes = *b;
  }
  if (auto* v = r.Get("HOOP_CUDA_IPC")) {
    if (*v != "0" && *v != "1") return InvalidArgument("HOOP_CUDA_IPC='" + *v + "': expected 1 (use it) or 0 (stage through host memory)");
    c.cuda_ipc = *v == "1";
  }
  if (auto* v = r.Get("HOOP_CYCLE_TIME_MS")) {
    auto ms = ParseNonNegative(*v);
    if (!ms || *ms > 10000) return InvalidArgument("HOOP_CYCLE_TIME_MS='" + *v + "': expected milliseconds in [0, 10000]");
    c.cycle_time_ms = *ms;
  }
  if (auto* v = r.Get("HOOP_FUSION_THRESHOLD")) {
    auto b = ParseSize(*v);
    if (!b || *b > (4ull << 30)) return InvalidArgument("HOOP_FUSION_THRESHOLD='" + *v + "': expected a size in [0, 4G]");
    c.fusion_threshold = *b;
  }
  if (r.Get("HOOP_CACHE_CAPACITY")) {
    int n = 0;
    HOOP_RETURN_IF_ERROR(r.Int("HOOP_CACHE_CAPACITY", &n, 0, 1 << 20));
    c.cache_capacity = static_cast<size_t>(n);
  }
  if (auto* v = r.Get("HOOP_STALL_WARNING_S")) {
    auto s = ParseNonNegative(*v);
    if (!s || *s > kMaxSeconds)
      return InvalidArgument("HOOP_STALL_WARNING_S='" + *v + "': expected seconds in [0, 604800] (0: never warn)");
    c.stall_warning_s = *s;
  }
  if (auto* v = r.Get("HOOP_TIMELINE")) c.timeline = *v;
  if (auto* v = r.Get("HOOP_LOG_LEVEL")) {
    auto level = ParseLogLevel(*v);
    if (!level) return InvalidArgument("HOOP_LOG_LEVEL='" + *v + "': expected none, error, warn, info or debug (any case; warning and trace too)");
    c.log_level = *level;
  }
  if (auto* v = r.Get("HOOP_KERNEL_ISA")) {
    if (*v != "auto" && *v != "generic" && *v != "avx2" && *v != "avx512")
      return InvalidArgument("HOOP_KERNEL_ISA='" + *v + "': expected auto, generic, avx2 or avx512");
    c.kernel_isa = *v;
  }
  return c;
}

std::map<std::string, std::string> ProcessEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

StatusOr<Config> Config::FromProcessEnv() { return FromEnv(ProcessEnvironment()); }

std::optional<LogLevel> ParseLogLevel(const std::string& text) {
  std::string v;
  for (char ch : text) v += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (v == "none" || v == "off" || v == "quiet") return LogLevel::kNone;
  if (v == "error" || v == "fatal") return LogLevel::kError;
  if (v == "warn" || v == "warning") return LogLevel::kWarn;
  if (v == "info") return LogLevel::kInfo;
  if (v == "debug" || v == "trace") return LogLevel::kDebug;
  return std::nullopt;
}

const std::string& ProcessKernelIsa() {
  static const std::string isa = [] {
    const char* v = std::getenv("HOOP_KERNEL_ISA");
    return std::string(v && *v ? v : "auto");
  }();
  return isa;
}

}  // namespace hoop
