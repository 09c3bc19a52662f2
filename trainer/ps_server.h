// A parameter server (issue 24, item 2; DistBelief's downpour SGD, with the stale-synchronous
// bound of Ho et al. 2013). Each server holds a shard of the model's parameters (whole tensors,
// dealt by size so the shards weigh alike: ShardParams) with their momentum, and serves every
// worker from a thread of its own over that worker's link (ps_links.h):
//   pull t:   the shard's parameters now, for the worker's step t, once every live worker has
//             pushed step t - S - 1 (--staleness S; none: at once);
//   push t:   the worker's gradient of step t, summed over its images: applied at once as one
//             momentum-SGD step on the mean over those images (asynchronous SGD); with S = 0 the
//             steps t of every live worker are summed first and applied as one step on their
//             mean, which is synchronous SGD's update exactly;
//   next e:   (to server 0) the next batch of epoch e to train, or -1 when none is left: with a
//             staleness bound other than 0 the batches of an epoch are dealt as workers ask, so a
//             fast worker trains more of them than a slow one (DistBelief's workers take their
//             data the same way); with S = 0 each worker has its fixed share, as sync's ranks;
//   epoch e:  (to server 0) the worker's epoch sums, images and batch-norm buffers, for the log;
//   done:     the worker has finished (or was stopped).
// A link that fails (the worker died, or went silent past HOOP_TIMEOUT) retires that worker: the
// staleness bound and the synchronous sum no longer wait for it, and server 0 says so.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trainer/layer.h"
#include "trainer/ps_links.h"
#include "trainer/sgd.h"

namespace hoop::train {

// Messages on a link: a header of 4 int64 {kind, a, b, c} on kHeaderTag, then any payload.
enum PsKind : int64_t { kPsPull = 1, kPsPush = 2, kPsEpoch = 3, kPsDone = 4, kPsNext = 5 };
inline constexpr int kPsHeaderTag = 1, kPsPayloadTag = 2, kPsReplyTag = 3;

// Parameter indices per server: the largest tensors first, each to the server holding the
// fewest values so far; each list in the model's order. The same on every rank.
std::vector<std::vector<int>> ShardParams(const std::vector<Param*>& params, int servers);

class PsServer {
 public:
  struct Settings {
    int staleness = -1;   // -1: none
    LrSchedule schedule;  // by the pushing worker's global step
    double momentum = 0.9, weight_decay = 0;
    int64_t batches = 0;        // server 0: batches per epoch it deals out (0: none)
    size_t report_doubles = 0;  // server 0: an epoch report's sums
    size_t buffer_floats = 0;   // server 0: and its batch-norm buffers
    bool announce = false;      // print when a worker is gone (server 0)
  };
  // `shard`: this server's parameters (their values are the model's start).
  PsServer(std::vector<Param*> shard, const Settings& settings, PsLinks& links, int rank);
  ~PsServer();
  // The shard's momentum, one tensor per parameter in shard order (a resumed run's), before Start.
  void LoadMomentum(const std::vector<const Tensor*>& momentum);
  void Start();  // one thread per worker
  // Waits until every worker has ended (finished or gone).
  void Join();

  // Server 0: waits until every worker still working has reported `epoch`; the reports summed
  // (their buffers averaged), with how many reported. False when none did (all gone or stopped).
  // images: each worker's images trained that epoch (0 for one that did not report).
  bool WaitEpoch(int epoch, std::vector<double>* sums, std::vector<float>* buffers, int* reporters,
                 std::vector<int64_t>* images);
  // The shard's parameters then its momentum buffers, one consistent copy (for the checkpoint).
  std::vector<float> Snapshot();
  struct Stats {
    int64_t updates = 0;  // SGD steps applied
    double mean_lag = 0;  // updates by others between a gradient's pull and its push
    int64_t max_lag = 0;
    int live = 0, done = 0, gone = 0;  // workers
    std::string gone_why;              // the first gone worker's cause
  };
  Stats stats();
  int signal() const { return signal_; }  // a stop signal a worker passed on when it stopped, or 0

 private:
  enum class State { kActive, kDone, kGone };
  void Serve(int worker);
  void Apply(int worker, int64_t step_in_run, int64_t clock, int64_t images, const std::vector<float>& grad);
  void ApplySum();  // S = 0: the summed step, once no live worker still owes it
  void Retire(int worker, State why, const std::string& cause);
  void Step(const float* grad, double images, double lr);

  std::vector<Param*> shard_;
  Sgd sgd_;
  Settings set_;
  PsLinks& links_;
  int rank_;
  size_t floats_ = 0;
  std::vector<std::thread> threads_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<State> state_;
  std::vector<int64_t> clock_;           // steps pushed, per worker
  std::vector<int64_t> pulled_version_;  // version_ at the worker's last pull
  int64_t version_ = 0;                  // updates applied
  double lag_sum_ = 0;
  int64_t lag_max_ = 0, lags_ = 0;
  std::string gone_why_;
  int signal_ = 0;
  // S = 0: the step being summed
  std::vector<double> sum_;
  double sum_images_ = 0;
  int64_t sum_clock_ = -1, sum_step_ = 0;
  // Server 0: epoch -> summed reports
  struct Report {
    std::vector<double> sums;
    std::vector<double> buffers;
    std::vector<int64_t> images;  // per worker
    int count = 0;
  };
  std::map<int, Report> reports_;
  std::map<int64_t, int64_t> dealt_;  // epoch -> batches dealt
  std::vector<int> reported_;         // epochs each worker has reported
};

}  // namespace hoop::train
