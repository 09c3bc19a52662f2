#include "common/config.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
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

constexpr double kMaxSeconds = 7 * 24 * 3600;         // HOOP_TIMEOUT, HOOP_STALL_WARNING_S
constexpr size_t kMaxChunkBytes = size_t{64} << 20;   // HOOP_CHUNK_BYTES
constexpr size_t kLargestDefaultChunk = 16 << 20;     // the back ends' own (shm on a GPU host)
constexpr size_t kMaxStagingBytes = size_t{1} << 30;  // HOOP_CHUNK_BYTES x HOOP_WINDOW

// The variables FromEnv reads in code, since they depend on one another (rank and size, the
// launchers' variables); every other HOOP_* variable is a row of kVars below.
const std::vector<std::string> kLaunchVars = {
    "HOOP_RANK", "HOOP_SIZE", "HOOP_LOCAL_RANK", "HOOP_LOCAL_SIZE", "HOOP_CROSS_RANK", "HOOP_CROSS_SIZE", "HOOP_JOIN"};

Status Expected(const std::string& name, const std::string& text, const std::string& what) {
  return InvalidArgument(name + "='" + text + "': " + what);
}

Status NotAnInteger(const std::string& name, const std::string& text, int64_t lo, int64_t hi) {
  return InvalidArgument(name + "='" + text + "' is not an integer in [" + std::to_string(lo) + ", " +
                         std::to_string(hi) + "]");
}

// One plain variable: its name, and how its text becomes a field of Config (or the error).
struct Var {
  const char* name;
  std::function<Status(const std::string& name, const std::string& text, Config& c)> read;
};

auto Text(std::string Config::*field) {
  return [field](const std::string&, const std::string& text, Config& c) {
    c.*field = text;
    return Status::Ok();
  };
}

auto OneOf(std::string Config::*field, std::set<std::string> names, std::string what) {
  return [=](const std::string& name, const std::string& text, Config& c) {
    if (!names.count(text)) return Expected(name, text, what);
    c.*field = text;
    return Status::Ok();
  };
}

// A byte count with K/M/G suffixes in [lo, hi].
auto Bytes(size_t Config::*field, size_t lo, size_t hi, std::string what) {
  return [=](const std::string& name, const std::string& text, Config& c) {
    auto b = ParseSize(text);
    if (!b || *b < lo || *b > hi) return Expected(name, text, what);
    c.*field = *b;
    return Status::Ok();
  };
}

// A plain integer in [lo, hi].
auto Count(size_t Config::*field, int64_t lo, int64_t hi) {
  return [=](const std::string& name, const std::string& text, Config& c) {
    auto n = ParseInt(text);
    if (!n || *n < lo || *n > hi) return NotAnInteger(name, text, lo, hi);
    c.*field = static_cast<size_t>(*n);
    return Status::Ok();
  };
}

// A non-negative number (seconds, milliseconds) up to hi.
auto Amount(double Config::*field, double hi, std::string what) {
  return [=](const std::string& name, const std::string& text, Config& c) {
    auto v = ParseNonNegative(text);
    if (!v || *v > hi) return Expected(name, text, what);
    c.*field = *v;
    return Status::Ok();
  };
}

Status ReadTimeout(const std::string& name, const std::string& text, Config& c) {
  auto s = ParseSeconds(text);
  auto t = s ? TimeoutFromSeconds(*s) : std::nullopt;
  if (!t) return Expected(name, text, std::string("expected ") + kTimeoutBounds);
  c.timeout = *t;
  return Status::Ok();
}

Status ReadCudaIpc(const std::string& name, const std::string& text, Config& c) {
  if (text != "0" && text != "1") return Expected(name, text, "expected 1 (use it) or 0 (stage through host memory)");
  c.cuda_ipc = text == "1";
  return Status::Ok();
}

Status ReadDeterministic(const std::string& name, const std::string& text, Config& c) {
  if (text != "0" && text != "1")
    return Expected(name, text, "expected 1 (reductions fold in rank order, bit for bit) or 0");
  c.deterministic = text == "1";
  return Status::Ok();
}

// 0 or 1.
auto Switch(bool Config::*field, std::string one_means) {
  return [=](const std::string& name, const std::string& text, Config& c) {
    if (text != "0" && text != "1") return Expected(name, text, "expected 1 (" + one_means + ") or 0");
    c.*field = text == "1";
    return Status::Ok();
  };
}

Status ReadLogLevel(const std::string& name, const std::string& text, Config& c) {
  auto level = ParseLogLevel(text);
  if (!level)
    return Expected(name, text, "expected none, error, warn, info or debug (any case; warning and trace too)");
  c.log_level = *level;
  return Status::Ok();
}

const std::vector<Var>& Vars() {
  static const std::vector<Var> vars = {
      {"HOOP_STORE", Text(&Config::store)},
      {"HOOP_JOB_TOKEN", Text(&Config::token)},
      {"HOOP_TRANSPORT", Text(&Config::transport)},
      {"HOOP_HOST", Text(&Config::host)},
      {"HOOP_TIMEOUT", ReadTimeout},
      // Every name of collectives/core/algo.h (common/ cannot include it; the unit test checks they agree).
      {"HOOP_ALGO", OneOf(&Config::algo,
                          {"auto", "ring", "tree", "doubling", "chain", "binomial", "flat", "pairwise", "dissemination",
                           "hierarchical", "fold", "fold_all", "fold_root"},
                          "expected auto, ring, tree, doubling, chain, binomial, flat, pairwise, dissemination, "
                          "hierarchical, fold, fold_all or fold_root")},
      {"HOOP_CHUNK_BYTES", Bytes(&Config::chunk_bytes, 4096, kMaxChunkBytes, "expected a size in [4K, 64M]")},
      {"HOOP_WINDOW", Count(&Config::window, 1, 256)},
      {"HOOP_STAGE_BYTES", Bytes(&Config::stage_bytes, 0, kMaxStagingBytes, "expected a size in [0, 1G]")},
      {"HOOP_STAGE_AHEAD", Bytes(&Config::stage_ahead_bytes, 0, kMaxStagingBytes, "expected a size in [0, 1G]")},
      {"HOOP_COMPRESSION",
       OneOf(&Config::compression, {"none", "fp16", "bf16", "auto"}, "expected none, fp16, bf16 or auto")},
      {"HOOP_UNEXPECTED_BYTES", Bytes(&Config::unexpected_bytes, 4096, size_t{1} << 40, "expected a size in [4K, 1T]")},
      {"HOOP_CUDA_IPC", ReadCudaIpc},
      {"HOOP_CUDA_IPC_MIN_BYTES",
       Bytes(&Config::cuda_ipc_min_bytes, 0, kMaxStagingBytes, "expected a size in [0, 1G]")},
      {"HOOP_DETERMINISTIC", ReadDeterministic},
      {"HOOP_TRACE_OPS", Count(&Config::trace_ops, 0, 1 << 20)},
      {"HOOP_TRACE_DIR", Text(&Config::trace_dir)},
      {"HOOP_TRACE_SIGNAL", OneOf(&Config::trace_signal, {"USR1", "USR2", "none"}, "expected USR1, USR2 or none")},
      {"HOOP_CYCLE_TIME_MS", Amount(&Config::cycle_time_ms, 10000, "expected milliseconds in [0, 10000]")},
      {"HOOP_FUSION_THRESHOLD", Bytes(&Config::fusion_threshold, 0, 4ull << 30, "expected a size in [0, 4G]")},
      {"HOOP_CACHE_CAPACITY", Count(&Config::cache_capacity, 0, 1 << 20)},
      {"HOOP_STALL_WARNING_S",
       Amount(&Config::stall_warning_s, kMaxSeconds, "expected seconds in [0, 604800] (0: never warn)")},
      {"HOOP_TIMELINE", Text(&Config::timeline)},
      {"HOOP_TIMELINE_MARK_CYCLES", Switch(&Config::timeline_mark_cycles, "mark each negotiation cycle")},
      {"HOOP_SHRINK_WAIT", Amount(&Config::shrink_wait_s, kMaxSeconds, "expected seconds in [0, 604800]")},
      {"HOOP_LOG_LEVEL", ReadLogLevel},
      {"HOOP_KERNEL_ISA",
       OneOf(&Config::kernel_isa, {"auto", "generic", "avx2", "avx512"}, "expected auto, generic, avx2 or avx512")},
  };
  return vars;
}

std::vector<std::string> KnownNames() {
  std::vector<std::string> known = kLaunchVars;
  for (const Var& v : Vars()) known.push_back(v.name);
  return known;
}

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
    if (!n || *n < lo || *n > hi) return NotAnInteger(k, *v, lo, hi);
    *out = static_cast<int>(*n);
    return Status::Ok();
  }

 private:
  const std::map<std::string, std::string>& env_;
};

// An unknown HOOP_* name is an error naming the nearest known one: a typo is never ignored.
Status CheckNames(const std::map<std::string, std::string>& env) {
  const std::vector<std::string> known = KnownNames();
  for (const auto& kv : env) {
    const std::string& k = kv.first;
    if (k.rfind("HOOP_", 0) != 0 || std::find(known.begin(), known.end(), k) != known.end()) continue;
    if (std::string near = Nearest(k, known); !near.empty())
      return InvalidArgument("unknown variable " + k + " (did you mean " + near + "?)");
    std::string all;
    for (const auto& n : known) all += (all.empty() ? "" : ", ") + n;
    return InvalidArgument("unknown variable " + k + " (known: " + all + ")");
  }
  return Status::Ok();
}

// torchrun's (also torch.distributed's env:// convention): its store at MASTER_PORT belongs to
// PyTorch, so hoop's, served by rank 0, is at the next port unless HOOP_STORE says. (hoop.init()
// in Python joins through torchrun's own store instead where it can: python/hoop/__init__.py.)
Status ReadTorchrun(const Reader& r, Config& c) {
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
  return Status::Ok();
}

// Rank and size: hooprun's own variables win, then torchrun's where torchrun itself started
// this process (TORCHELASTIC_RUN_ID: it is the innermost launcher, as in `srun torchrun`, where
// SLURM_PROCID counts hosts, not ranks), then mpirun's, then Slurm's, then torchrun's variables
// set by anything else.
Status ReadLauncher(const Reader& r, Config& c) {
  const bool torchrun = r.Get("RANK") && r.Get("WORLD_SIZE");
  if (const std::string* join = r.Get("HOOP_JOIN")) {
    if (*join != "0" && *join != "1")
      return Expected("HOOP_JOIN", *join, "expected 1 (a newcomer to a running job) or 0");
    c.join = *join == "1";
  }
  if (c.join && r.Get("HOOP_RANK") && !r.Get("HOOP_SIZE")) {
    // A newcomer elastic hooprun started: HOOP_RANK is its number in the job (as hoop/exited
    // lists it), not its rank in a communicator, which the grow that admits it gives.
    c.launcher = Launcher::kHooprun;
    HOOP_RETURN_IF_ERROR(r.Int("HOOP_RANK", &c.rank, 0, 1 << 20));
  } else if (r.Get("HOOP_RANK") || r.Get("HOOP_SIZE")) {
    if (!r.Get("HOOP_RANK") || !r.Get("HOOP_SIZE"))
      return InvalidArgument("HOOP_RANK and HOOP_SIZE must be set together");
    c.launcher = Launcher::kHooprun;
    HOOP_RETURN_IF_ERROR(r.Int("HOOP_SIZE", &c.size, 1, 1 << 20));
    HOOP_RETURN_IF_ERROR(r.Int("HOOP_RANK", &c.rank, 0, c.size - 1));
  } else if (torchrun && r.Get("TORCHELASTIC_RUN_ID")) {
    HOOP_RETURN_IF_ERROR(ReadTorchrun(r, c));
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
  } else if (torchrun) {
    HOOP_RETURN_IF_ERROR(ReadTorchrun(r, c));
  }
  HOOP_RETURN_IF_ERROR(r.Int("HOOP_LOCAL_RANK", &c.local_rank, 0, 1 << 20));
  HOOP_RETURN_IF_ERROR(r.Int("HOOP_LOCAL_SIZE", &c.local_size, 1, 1 << 20));
  HOOP_RETURN_IF_ERROR(r.Int("HOOP_CROSS_SIZE", &c.cross_size, 1, 1 << 20));
  return r.Int("HOOP_CROSS_RANK", &c.cross_rank, 0, (c.cross_size > 0 ? c.cross_size : 1 << 20) - 1);
}

}  // namespace

StatusOr<Config> Config::FromEnv(const std::map<std::string, std::string>& env) {
  Config c;
  Reader r(env);
  HOOP_RETURN_IF_ERROR(CheckNames(env));
  HOOP_RETURN_IF_ERROR(ReadLauncher(r, c));
  for (const Var& v : Vars())
    if (const std::string* text = r.Get(v.name)) HOOP_RETURN_IF_ERROR(v.read(v.name, *text, c));
  if (const std::string* tmp = r.Get("TMPDIR"); tmp && !tmp->empty()) c.tmp_dir = *tmp;
  // Every communicator keeps `window` staging chunks (more while compressed sends are in flight).
  const size_t chunk = c.chunk_bytes ? c.chunk_bytes : kLargestDefaultChunk;
  if (chunk * c.window > kMaxStagingBytes)
    return InvalidArgument("HOOP_CHUNK_BYTES x HOOP_WINDOW = " + FormatBytes(chunk) + " x " + std::to_string(c.window) +
                           " bytes of staging per communicator; at most 1G");
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

std::optional<std::chrono::milliseconds> TimeoutFromSeconds(double seconds) {
  if (!(seconds >= 0.001 && seconds <= kMaxSeconds)) return std::nullopt;  // (NaN too)
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

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
