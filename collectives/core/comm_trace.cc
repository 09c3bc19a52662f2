// The Communicator's flight recorder (flight_recorder.h, issue 55): what each operation is as the
// recorder keeps it, the dump's header (who wrote it, what is queued), dumps at a failure, on a
// signal (trace_signal.h) and on request, and the live view's answers (trace_status.h).
#include <unistd.h>

#include <thread>

#include "collectives/core/comm_core.h"
#include "collectives/core/trace_signal.h"
#include "collectives/core/trace_status.h"
#include "common/logging.h"

namespace hoop {

// Dumps on a signal, and answers to the live view, for as long as this communicator lives
// (unregistered first thing in ~CommCore).
void CommCore::RegisterTrace() {
  if (!recorder_->on()) return;
  trace_signal_ = TraceSignal::Register(opts_.trace_signal, [this] {
    auto path = DumpTrace(opts_.trace_dir.empty() ? opts_.tmp_dir : opts_.trace_dir, "signal");
    return "rank " + std::to_string(opts_.rank) + ": " +
           (path.ok() ? "flight recorder written to " + *path : path.status().message());
  });
  // The launcher signals only ranks that will dump rather than die of the signal.
  if (trace_signal_ && opts_.job_rank >= 0 && store_)
    (void)store_->Set("hoop/trace/signal/" + std::to_string(opts_.job_rank), std::to_string(opts_.trace_signal));
  // The live view: the last operations, and every one in flight.
  constexpr size_t kLiveOps = 16;
  trace_status_ = TraceStatus::Register(opts_.status_store, opts_.token, opts_.job_rank,
                                        [this] { return hoop::TraceJson(Owner("status"), *recorder_, kLiveOps); });
}

void CommCore::NameNextCall(std::string name) {
  std::lock_guard<std::mutex> lock(label_mu_);
  next_name_ = std::move(name);
  name_pending_.store(!next_name_.empty(), std::memory_order_relaxed);
}

std::shared_ptr<const std::string> CommCore::TakeName() {
  std::lock_guard<std::mutex> lock(label_mu_);
  name_pending_.store(false, std::memory_order_relaxed);
  if (next_name_.empty()) return nullptr;
  auto name = std::make_shared<const std::string>(std::move(next_name_));
  next_name_.clear();
  return name;
}

void CommCore::TraceWaits(uint32_t step, uint32_t chunk, Algo algo) {
  RecordDeferred();
  recorder_->Step(running_.id, step, chunk, algo);
}

TraceCall CommCore::TraceOf(const Op& op) const {
  TraceCall t;
  t.stream = op.stream.has_value();
  if (op.p2p) {
    t.send = op.p2p->is_send;
    t.recv = !op.p2p->is_send;
    t.peer = op.p2p->peer;
    t.tag = op.p2p->tag;
    t.dtype = op.p2p->dtype;
    t.count = op.p2p->count;
    t.mem = op.p2p->kind;
    return t;
  }
  return TraceOfCollective(op, op.kind == CollKind::kBarrier ? 0 : DescCount(op));
}

TraceOwner CommCore::Owner(const std::string& reason) const {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  TraceOwner o{opts_.name,
               opts_.rank,
               opts_.size,
               opts_.job_rank < 0 ? opts_.rank : opts_.job_rank,
               static_cast<int>(::getpid()),
               host,
               reason,
               {},
               false,
               {},
               {}};
  {
    std::lock_guard<std::mutex> lock(label_mu_);
    o.label = trace_label_;
    o.retransmits = link_retrans_;
  }
  // The queue, where its lock is free within moments: a dump never waits on a thread that may
  // be stuck (its holders only push and pop).
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  for (int i = 0; i < 100 && !lock.try_lock(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (lock.owns_lock()) {
    for (const Op& q : queue_)
      if (!q.abort) o.queued.push_back(TraceOf(q));
    o.queue_listed = true;
  }
  return o;
}

StatusOr<std::string> CommCore::DumpTrace(const std::string& dir, const std::string& reason) const {
  const std::string& where = dir.empty() ? opts_.trace_dir : dir;
  if (where.empty())
    return InvalidArgument("rank " + std::to_string(opts_.rank) +
                           ": dumping the flight recorder: no directory (give one, or set HOOP_TRACE_DIR)");
  return WriteTrace(where, Owner(reason), *recorder_);
}

std::string CommCore::TraceJson(const std::string& reason) const { return hoop::TraceJson(Owner(reason), *recorder_); }

// The rank whose communicator fails (a timeout, a lost or aborted peer, ranks that disagree)
// writes its recorder where HOOP_TRACE_DIR says, once, for hoop-doctor.
void CommCore::DumpAtFailure(const Status& why) {
  if (opts_.trace_dir.empty() || !recorder_->on()) return;
  failure_dumped_.store(true, std::memory_order_relaxed);
  auto path = DumpTrace(opts_.trace_dir, why.code() == Code::kDeadlineExceeded ? "timeout" : "error");
  if (path.ok())
    HOOP_LOG(kWarn, "rank " << opts_.rank << ": flight recorder written to " << *path);
  else
    HOOP_LOG(kWarn, "rank " << opts_.rank << ": " << path.status().message());
}

// A failed send or receive leaves the communicator usable (no poison, no dump of Poison's): its
// dump is written here, where none was written yet, from the failed call's thread (RunNow), or,
// for one whose Work failed, when the communicator goes (~CommCore) if a recorded call failed.
void CommCore::DumpIfFailed(const Status& why) {
  if (!OwesDump(why) || failure_dumped_.load(std::memory_order_relaxed)) return;
  DumpAtFailure(why);
}

void CommCore::DumpAtEnd() {
  if (!failure_dumped_.load(std::memory_order_relaxed) && recorder_->failed_any())
    DumpAtFailure(Aborted("a recorded call failed"));
}

std::string CommCore::NoteLinks(const std::vector<int>& waited) {
  std::vector<int64_t> resent(static_cast<size_t>(opts_.size), -1);
  bool known = false;
  for (int p = 0; p < opts_.size; ++p)
    if (Endpoint* e = p == opts_.rank ? nullptr : transport_->endpoint(p)) {
      resent[static_cast<size_t>(p)] = e->Retransmits();
      known |= resent[static_cast<size_t>(p)] >= 0;
    }
  std::string said;
  for (int p : waited)
    if (p >= 0 && p < opts_.size && resent[static_cast<size_t>(p)] >= kLossyResends)
      said += "; TCP to rank " + std::to_string(p) + " resent " + std::to_string(resent[static_cast<size_t>(p)]) +
              " segments (a lossy link?)";
  std::lock_guard<std::mutex> lock(label_mu_);
  link_retrans_ = known ? std::move(resent) : std::vector<int64_t>{};
  return said;
}

}  // namespace hoop
