// Config: every HOOP_* variable (and the launcher variables of mpirun and Slurm) is read here,
// once, into one value that is passed down. Nothing else in hoop calls getenv.
//
// Variables (see README "Configuration"):
//   HOOP_RANK, HOOP_SIZE, HOOP_LOCAL_RANK, HOOP_LOCAL_SIZE   set by hooprun
//   OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}         OpenMPI's mpirun
//   SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID                 Slurm's srun
//   RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE            torchrun's (both of the first two);
//   MASTER_ADDR, MASTER_PORT                                  hoop's store: MASTER_PORT + 1
//   TORCHELASTIC_RUN_ID                                       torchrun started this process: its
//                                                             ranks win over mpirun's and Slurm's
//   HOOP_STORE        rendezvous: tcp://HOST:PORT or file:///DIR
//   HOOP_JOB_TOKEN    the job's secret; every connection must present it
//   HOOP_TIMEOUT      seconds any operation may wait (default 300; 0.001 to 604800, a week)
//   HOOP_ALGO         auto | ring | tree | doubling | hierarchical (allreduce), chain | binomial
//                     (broadcast), flat (gather, scatter), pairwise (alltoall), fold | fold_all
//                     | fold_root (allreduce, reduce, reduce-scatter: the deterministic folds)
//   HOOP_TRANSPORT    back end to use, or a list tried in order per peer (shm,tcp) (default:
//                     per peer, the first built-in one that can connect)
//   HOOP_HOST         address to listen on and advertise (default: this host's address on
//                     the route to the tcp:// store; 127.0.0.1 with other stores)
//   HOOP_CHUNK_BYTES  pipeline chunk size (default: the back end's; shm 128K, others 512K;
//                     4K to 64M)
//   HOOP_WINDOW       chunks in flight per operation (default 8; 1 to 256; chunk x window is
//                     staging memory per communicator, at most 1G)
//   HOOP_STAGE_BYTES  the largest batch of copies between a device buffer and its pinned host
//                     staging in a call staged piece by piece (default 4M; 0: one copy per
//                     chunk; at most 1G)
//   HOOP_STAGE_AHEAD  how far past what the wire has asked for the copies into host staging are
//                     queued (default 8M; 0: one batch at a time; 1G: a call's whole input at
//                     its start, as before)
//   HOOP_CUDA_IPC     1 (default): device buffers of ranks on one host move by CUDA IPC; 0: they
//                     stage through pinned host memory
//   HOOP_CUDA_IPC_MIN_BYTES  calls of fewer bytes stage their device buffers through pinned host
//                     memory where CUDA IPC could move them (default 0: IPC at every size; at
//                     most 1G)
//   HOOP_DETERMINISTIC  1: every reduction gives, for each element, the bits of the left fold
//                     over the ranks in rank order, whatever the algorithm, chunking, fusion,
//                     transport or placement (schedules/fold.cc); 0 (default): the fastest way
//   HOOP_TRACE_OPS    the flight recorder's operations kept per communicator (default 2000,
//                     rounded up to 2048; 0: off; collectives/core/flight_recorder.h)
//   HOOP_TRACE_DIR    where each rank writes its flight recorder's JSON when its communicator
//                     fails (a timeout, a lost peer, ranks that disagree): hoop-trace.<comm>.
//                     <rank>.json (default: none written at a failure; on a signal, TMPDIR)
//   HOOP_TRACE_SIGNAL USR1 (default) | USR2 | none: the signal that dumps every recorder of the
//                     process (collectives/core/trace_signal.h)
//   HOOP_COMPRESSION  none | fp16 | bf16 | auto: how f32/f64 sum/avg allreduces travel
//                     (default none; collectives/kernels/wire.h)
//   HOOP_LOG_LEVEL    none | error | warn | info | debug (default warn; any case, and
//                     horovodrun's warning and trace, which is debug here; none: no line at all,
//                     every failure still returned by its call)
//   HOOP_KERNEL_ISA   auto | generic | avx2 | avx512: the host reduction kernels' instruction set
//                     (default auto: the widest this CPU runs); a test knob, so a suite run on one
//                     CPU also runs the code another CPU would choose
//   HOOP_UNEXPECTED_BYTES  point-to-point messages a rank holds that no receive has taken yet,
//                     per communicator (default 64M; 4K to 1T; each peer's share is this over
//                     ranks - 1, at least 256 bytes); past it, senders wait. Also what tcp and
//                     shm hold per peer of collective messages that came before their receive,
//                     once a split or dup shares the connections (shared_transport.h)
// The tensor fusion runtime's (tensorfusion/):
//   HOOP_CYCLE_TIME_MS      milliseconds between negotiation cycles (default 1)
//   HOOP_FUSION_THRESHOLD   largest fusion buffer in bytes, K/M/G suffixes (default 64M; 0: off)
//   HOOP_CACHE_CAPACITY     responses remembered for the one-collective fast path (default 1024)
//   HOOP_STALL_WARNING_S    warn after this many seconds about tensors some ranks have not
//                           submitted (default 60; 0: never; at most 604800)
//   HOOP_TIMELINE           write a Chrome trace of every tensor's phases to this file (rank 0)
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "common/logging.h"
#include "common/status.h"

namespace hoop {

// This process's environment as a map (what FromProcessEnv parses; what hooprun hands on).
std::map<std::string, std::string> ProcessEnvironment();

enum class Launcher { kNone, kHooprun, kMpirun, kSlurm, kTorchrun };
const char* LauncherName(Launcher l);

// The flight recorder's size where HOOP_TRACE_OPS does not say (on by default: its cost is within
// the noise of a half-microsecond allreduce, docs/PERF.md).
inline constexpr size_t kDefaultTraceOps = 2000;

struct Config {
  int rank = 0;  // in [0, size), but for a newcomer (join) given HOOP_RANK alone: its number in the job
  int size = 1;
  int local_rank = -1;  // -1: not given; the communicator derives it from host names
  int local_size = -1;
  // Horovod's cross rank and size (hooprun sets them): this rank's place among the ranks of the
  // same local rank on the job's hosts, and how many hosts have such a rank. -1: not given.
  int cross_rank = -1;
  int cross_size = -1;
  Launcher launcher = Launcher::kNone;
  // HOOP_JOIN=1: this process is a newcomer to a running job (elastic hooprun starts its
  // replacements so): hoop_init_from_env and hoop.init() join as hoop_init_join does.
  bool join = false;
  std::string store;
  std::string token;
  std::chrono::milliseconds timeout{300000};
  std::string timeout_name = "HOOP_TIMEOUT";  // what set it, as its errors say ("timeout": the caller's)
  // HOOP_SHRINK_WAIT: how long a shrink waits for a member neither in it nor known to be gone
  // (a stopped process, a host that went silent) before it goes on without it.
  double shrink_wait_s = 10;
  std::string algo = "auto";
  std::string transport;
  std::string host;        // empty: the address on the route to the store server (see JoinJob)
  size_t chunk_bytes = 0;  // 0: the back end's preference
  size_t window = 8;
  std::string compression = "none";
  LogLevel log_level = LogLevel::kWarn;
  size_t unexpected_bytes = 64u << 20;
  size_t stage_bytes = 4u << 20;        // HOOP_STAGE_BYTES
  size_t stage_ahead_bytes = 8u << 20;  // HOOP_STAGE_AHEAD
  std::string kernel_isa = "auto";      // HOOP_KERNEL_ISA
  bool cuda_ipc = true;                 // HOOP_CUDA_IPC: device buffers of ranks on one host move by CUDA IPC
  size_t cuda_ipc_min_bytes = 0;        // HOOP_CUDA_IPC_MIN_BYTES: smaller calls stage instead
  bool deterministic = false;           // HOOP_DETERMINISTIC
  size_t trace_ops = kDefaultTraceOps;  // HOOP_TRACE_OPS: the flight recorder's operations per communicator
  std::string trace_dir;                // HOOP_TRACE_DIR: where its dumps go (empty: none at a timeout)
  std::string trace_signal = "USR1";    // HOOP_TRACE_SIGNAL: USR1, USR2 or none: the signal that dumps it
  std::string tmp_dir = "/tmp";         // TMPDIR: where a signal's dump goes without HOOP_TRACE_DIR
  // Tensor fusion (tensorfusion/runtime.h).
  double cycle_time_ms = 1;
  size_t fusion_threshold = 64u << 20;
  size_t cache_capacity = 1024;
  double stall_warning_s = 60;
  std::string timeline;
  bool timeline_mark_cycles = false;  // HOOP_TIMELINE_MARK_CYCLES: an instant event at each cycle's start

  // Parses a copy of the environment. Unknown HOOP_* names are an error (a typo should not be
  // silently ignored); malformed values are an error naming the variable.
  static StatusOr<Config> FromEnv(const std::map<std::string, std::string>& env);
  static StatusOr<Config> FromProcessEnv();
};

// A timeout in seconds as HOOP_TIMEOUT bounds it (0.001 to a week, so that every deadline, now +
// timeout in nanoseconds, stays representable), however it was given; nullopt outside them.
std::optional<std::chrono::milliseconds> TimeoutFromSeconds(double seconds);
inline constexpr const char* kTimeoutBounds = "seconds in [0.001, 604800] (a week)";

// HOOP_LOG_LEVEL's value (any case; "warning", "trace" and "fatal" as horovodrun and mpirun
// users write them); nullopt if it names no level.
std::optional<LogLevel> ParseLogLevel(const std::string& text);

// HOOP_KERNEL_ISA of this process's environment, read once: the reduction kernels' choice is the
// process's, like the CPU it runs on (collectives/kernels/reduce.cc). "auto" when unset;
// Config::FromEnv refuses a value that names no instruction set.
const std::string& ProcessKernelIsa();

}  // namespace hoop
