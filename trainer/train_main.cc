// hoop-train: the reference trainer's command (options.h lists its options, trainer.h its loop).
// Exit codes: 0 trained; 2 bad options or settings; 1 anything else (data, job, training),
// always with one line saying which rank and what failed.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <new>
#include <thread>

#include "collectives/api/bootstrap.h"
#include "common/version.h"
#include "trainer/gemm.h"
#include "trainer/model.h"
#include "trainer/sweep.h"
#include "trainer/trainer.h"

using namespace hoop;
using namespace hoop::train;

namespace {
// The one process-wide datum of hoop-train: a signal handler can reach nothing else.
std::atomic<int>& StopFlag() {
  static std::atomic<int> flag{0};
  return flag;
}
}  // namespace

namespace {
int Main(int argc, char** argv);

// A preemption loop runs one command again and again (hoop-train ... --checkpoint F --resume):
// with no F yet, the first run starts afresh, saying so. Without --resume, an F that exists is
// overwritten, also said. Rank 0's look at F decides for every rank (it alone reads and writes F).
Status SettleResume(Options& o, Communicator& comm) {
  if (o.checkpoint.empty()) return Status::Ok();
  double exists = comm.rank() == 0 && ::access(o.checkpoint.c_str(), F_OK) == 0 ? 1 : 0;
  Buffer b{&exists, 1, DType::kF64, MemKind::kHost};
  HOOP_RETURN_IF_ERROR(comm.Broadcast(b, b, 0).Wait().WithContext("sharing whether " + o.checkpoint + " exists"));
  if (o.resume && exists == 0) {
    o.resume = false;
    if (comm.rank() == 0)
      std::printf("hoop-train: --resume: no checkpoint at %s yet; training from the start (it is written there)\n",
                  o.checkpoint.c_str());
  } else if (!o.resume && exists != 0 && comm.rank() == 0) {
    std::printf(
        "hoop-train: --checkpoint %s exists; this run starts afresh and overwrites it (--resume continues "
        "from it)\n",
        o.checkpoint.c_str());
  }
  std::fflush(stdout);
  return Status::Ok();
}
}  // namespace

// No std::bad_alloc leaves hoop-train uncaught: the data, the model or a batch that does not fit
// ends the rank with one line.
int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "hoop-train: out of memory (try a smaller --batch, or fewer ranks on this host)\n");
    return 1;
  }
}

namespace {
int Main(int argc, char** argv) {
  auto opts = ParseOptions(argc, argv);
  if (!opts.ok()) {
    std::fprintf(stderr, "hoop-train: %s\n", opts.status().message().c_str());
    return 2;
  }
  if (opts->help) {
    std::fputs(Usage(), stdout);
    return 0;
  }
  if (opts->version) {
    std::printf("%s\n", VersionLine("hoop-train").c_str());
    return 0;
  }
  // Ctrl-C and SIGTERM are noted (StopFlag) until the training loop looks, at a step every rank
  // agrees on, writes its checkpoint and returns. A handler, not a blocked mask: OpenBLAS starts
  // its threads when it is loaded, before main, with the signals unblocked.
  struct sigaction sa {};
  sa.sa_handler = [](int sig) { StopFlag().store(sig, std::memory_order_relaxed); };
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  auto cfg = Config::FromProcessEnv();
  if (!cfg.ok()) {
    std::fprintf(stderr, "hoop-train: %s\n", cfg.status().message().c_str());
    return 2;
  }
  if (!opts->transport.empty()) cfg->transport = opts->transport;
  // --deterministic: every communicator of the job folds its sums in rank order; the CPU layers'
  // thread count no longer follows the ranks per host (its split of a batch changes their bits).
  if (opts->deterministic) cfg->deterministic = true;
  if (opts->threads == 0 && opts->deterministic) opts->threads = 1;
  if (opts->threads == 0) {
    int cores = static_cast<int>(std::thread::hardware_concurrency());
    int local = cfg->local_size > 0 ? cfg->local_size : 1;
    opts->threads = std::max(1, cores / local);
  }
  InitBlas();
  const std::string dir = opts->data.empty() ? kDefaultDataDir : opts->data;
  auto train = LoadDataset(dir, "train");
  auto test = train.ok() ? LoadDataset(dir, "test") : StatusOr<Dataset>(train.status());
  if (!test.ok()) {
    std::fprintf(stderr, "hoop-train: rank %d: %s\n", cfg->rank, test.status().message().c_str());
    return 1;
  }
  // A newcomer elastic hooprun started (HOOP_JOIN=1) joins the running job at its next grow.
  auto job = cfg->join ? JoinAsNewcomer(*cfg) : JoinJob(*cfg);
  if (!job.ok()) {
    std::fprintf(stderr, "hoop-train: rank %d: %s\n", cfg->rank, job.status().message().c_str());
    return 1;
  }
  // The most images one rank may take in a step: its --shares entry, or with --balance speed
  // nearly the whole global batch (a fast rank beside slow ones).
  int most = opts->batch;
  if (!opts->shares.empty()) most = *std::max_element(opts->shares.begin(), opts->shares.end());
  if (opts->balance == "speed") most = opts->batch * std::max(1, (*job)->comm->size());
  // A rank on a GPU keeps its activations there: the host's memory bounds CPU ranks only.
  const bool on_gpu = opts->device == "cuda" ||
                      (!opts->devices.empty() && cfg->rank >= 0 && cfg->rank < static_cast<int>(opts->devices.size()) &&
                       opts->devices[cfg->rank] == "cuda");
  if (std::string why = on_gpu ? "" : BatchTooLarge(opts->model, most, cfg->local_size > 0 ? cfg->local_size : 1);
      !why.empty()) {
    std::fprintf(stderr, "hoop-train: rank %d: %s\n", cfg->rank, why.c_str());
    return 2;
  }
  if (!opts->sweep.empty()) {
    std::vector<std::string> args;  // this command line less the sweep's own options
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--ensemble") continue;
      if (a == "--sweep") {
        ++i;
        continue;
      }
      args.push_back(a);
    }
    auto configs = SweepConfigs(args, opts->sweep);
    StatusOr<int> swept = configs.ok()
                              ? RunSweep(*configs, opts->ensemble, *cfg, *(*job)->comm, *train, *test, &StopFlag())
                              : StatusOr<int>(configs.status());
    if (!swept.ok()) {
      std::fprintf(stderr, "hoop-train: rank %d: %s\n", cfg->rank, swept.status().message().c_str());
      return 1;
    }
    return *swept ? 128 + *swept : 0;
  }
  if (cfg->join && !opts->elastic) {
    std::fprintf(stderr, "hoop-train: rank %d: a newcomer to a running job (HOOP_JOIN=1) trains with --elastic\n",
                 cfg->rank);
    return 2;
  }
  if (Status s = cfg->join ? Status::Ok() : SettleResume(*opts, *(*job)->comm); !s.ok()) {
    std::fprintf(stderr, "hoop-train: rank %d: %s\n", cfg->rank, s.message().c_str());
    return 1;
  }
  StatusOr<RunResult> result = Internal("not run");
  try {
    result = Train(*opts, *cfg, *(*job)->comm, *train, *test, &StopFlag());
  } catch (const std::bad_alloc&) {
    result = Internal("out of memory (--batch " + std::to_string(opts->batch) + " of " + opts->model +
                      "; try a smaller one)");
  } catch (const DeviceError& e) {  // a failed cuDNN, cuBLAS or CUDA call of the GPU layers
    result = Internal(std::string("on the GPU: ") + e.what());
  }
  if (!result.ok()) {
    std::string m = result.status().message();
    if (m.rfind("hoop-train: rank", 0) != 0) m = "hoop-train: rank " + std::to_string(cfg->rank) + ": " + m;
    std::fprintf(stderr, "%s\n", m.c_str());
    return 1;
  }
  if (result->interrupted) return 128 + result->interrupted;  // as the shell reports it: 130, 143
  if (result->nothing_left) return 0;
  if (cfg->rank == 0 && !result->epochs.empty()) {
    const auto& last = result->epochs.back();
    std::printf("hoop-train: done: %s, %d epoch(s), test accuracy %.2f%%, %.1f s\n", opts->model.c_str(), last.epoch,
                100 * last.test_acc, last.wall_s);
  }
  return 0;
}
}  // namespace
