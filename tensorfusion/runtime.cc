#include "tensorfusion/runtime.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "collectives/kernels/wire.h"
#include "common/device.h"
#include "common/extent.h"
#include "common/logging.h"
#include "tensorfusion/execute.h"
#include "tensorfusion/fusion_planner.h"
#include "tensorfusion/stand_in.h"

namespace hoop::fusion {

FusionOptions FusionOptions::FromConfig(const Config& c) {
  FusionOptions o;
  o.cycle_time_ms = c.cycle_time_ms;
  o.fusion_threshold = c.fusion_threshold;
  o.cache_capacity = c.cache_capacity;
  o.stall_warning_s = c.stall_warning_s;
  o.timeline = c.timeline;
  o.timeline_mark_cycles = c.timeline_mark_cycles;
  o.timeout = c.timeout;
  o.timeout_name = c.timeout_name;
  return o;
}

StatusOr<std::unique_ptr<Runtime>> Runtime::Start(Communicator& comm, const FusionOptions& o) {
  std::unique_ptr<Runtime> rt(new Runtime(comm, o));
  HOOP_RETURN_IF_ERROR(
      rt->timeline_.Open(o.timeline, comm.rank(), o.timeline_mark_cycles).WithContext("HOOP_TIMELINE"));
  rt->thread_ = std::thread([r = rt.get()] { r->Loop(); });
  return rt;
}

Runtime::Runtime(Communicator& comm, const FusionOptions& o)
    : comm_(comm),
      opts_(o),
      cache_(o.cache_capacity),
      negotiator_(comm, o.timeout, o.timeout_name, o.stall_warning_s, waiters_.get()) {
  // Half the stall warning (or of the timeout): early enough for rank 0 to name the missing
  // ranks on time, late enough that ranks a little out of step never leave the fast path.
  double s = std::chrono::duration<double>(o.timeout).count();
  if (o.stall_warning_s > 0) s = std::min(s, o.stall_warning_s);
  report_after_ = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s / 2));
}

// An error it had stopped on was returned to every handle it failed already: nothing is lost
// by not returning it again from here.
Runtime::~Runtime() {
  if (Status s = Shutdown(); !s.ok())
    HOOP_LOG(kDebug, "tensor fusion runtime destroyed after it stopped: " << s.message());
}

// ---- submission (any thread) ----

Handle Runtime::Allreduce(const std::string& name, const Buffer& in, const Buffer& out, ReduceOp op, TensorOptions o) {
  TensorParams p;
  p.kind = CollKind::kAllreduce;
  p.op = op;
  p.count = out.count;
  return Submit(name, p, in, out, std::move(o));
}

Handle Runtime::Broadcast(const std::string& name, const Buffer& in, const Buffer& out, int root, TensorOptions o) {
  TensorParams p;
  p.kind = CollKind::kBroadcast;
  p.root = root;
  p.count = out.count;
  return Submit(name, p, in, out, std::move(o));
}

Handle Runtime::Allgather(const std::string& name, const Buffer& in, const Buffer& out, TensorOptions o) {
  TensorParams p;
  p.kind = CollKind::kAllgather;
  p.count = in.count;
  return Submit(name, p, in, out, std::move(o));
}

std::string Runtime::Check(const TensorParams& p, const Buffer& in, const Buffer& out, const TensorOptions& o) const {
  const bool reads_in = p.kind != CollKind::kBroadcast || comm_.rank() == p.root;
  if (in.kind == MemKind::kCuda || out.kind == MemKind::kCuda) {
    // Staged through the host fusion buffer (execute.cc): it needs a device.
    auto devices = CudaDeviceCount();
    if (!devices.ok()) return "the tensor is CUDA device memory, but: " + devices.status().message();
  }
  if (reads_in && in.dtype != out.dtype)
    return "input is " + std::string(DTypeName(in.dtype)) + ", output " + DTypeName(out.dtype);
  const size_t n = static_cast<size_t>(comm_.size());
  for (const Buffer* b : {&in, &out}) {
    if (b == &in && !reads_in) continue;
    const char* which = b == &in ? "input " : "output ";
    if (std::string why = ExtentProblem(b->data, b->count, b->dtype); !why.empty()) return which + why;
    if (b->count * DTypeSize(b->dtype) > comm_.MaxCallBytes())
      return which + ("count " + std::to_string(b->count) + " x " + DTypeName(b->dtype)) + " is more than the " +
             std::to_string(comm_.MaxCallBytes()) + " bytes one call can address";
  }
  if (p.kind == CollKind::kAllgather && !CheckedMul(in.count, n))
    return "count " + std::to_string(in.count) + " x " + std::to_string(n) + " ranks is 2^64 elements or more";
  const size_t want_out = p.kind == CollKind::kAllgather ? in.count * n : out.count;
  if (reads_in && p.kind != CollKind::kAllgather && in.count != out.count)
    return "input has " + std::to_string(in.count) + " elements, output " + std::to_string(out.count);
  if (out.count != want_out)
    return "output has " + std::to_string(out.count) + " elements, needs " + std::to_string(want_out);
  if ((reads_in && in.count && !in.data) || (out.count && !out.data)) return "buffer is NULL";
  if (p.kind == CollKind::kBroadcast && (p.root < 0 || p.root >= comm_.size()))
    return "root " + std::to_string(p.root) + " is not a rank (size " + std::to_string(comm_.size()) + ")";
  if (p.kind == CollKind::kAllreduce) {
    if (!OpApplies(out.dtype, p.op)) return OpMismatch(out.dtype, p.op);
  }
  const bool is_float = IsFloat(out.dtype);
  if (o.prescale != 1 || o.postscale != 1) {
    if (p.kind != CollKind::kAllreduce) return "scale factors apply to allreduce only";
    if (!is_float) return std::string("scale factors need floating-point data, not ") + DTypeName(out.dtype);
  }
  if (o.compression) {
    if (p.kind != CollKind::kAllreduce) return "compression applies to allreduce only";
    bool explicit16 = *o.compression == Compression::kFp16 || *o.compression == Compression::kBf16;
    if (explicit16 && !Compressible(out.dtype, p.op))
      return std::string(CompressionName(*o.compression)) + " compression needs f32 or f64 data with sum or avg, not " +
             DTypeName(out.dtype) + " " + ReduceOpName(p.op);
  }
  return "";
}

namespace {
Buffer Located(Buffer b) {
  if (b.kind == MemKind::kCuda && b.device < 0 && b.data != nullptr) b.device = QueryMemory(b.data).device;
  return b;
}
}  // namespace

Handle Runtime::Submit(const std::string& name, TensorParams p, const Buffer& in, const Buffer& out, TensorOptions o) {
  p.dtype = out.dtype;
  p.mem = out.kind;
  p.prescale = o.prescale;
  p.postscale = o.postscale;
  p.unfused = !o.fuse;
  if (o.compression) p.compression = static_cast<uint8_t>(*o.compression);
  auto state = std::make_shared<HandleState>(name, std::move(o.callback));
  state->waiters = waiters_;
  const std::string who = "rank " + std::to_string(comm_.rank()) + ": tensor '";
  Status s;
  if (name.empty()) {
    s = InvalidArgument("rank " + std::to_string(comm_.rank()) + ": a tensor needs a name");
  } else if (std::string why = Check(p, in, out, o); !why.empty()) {
    s = Status(why.rfind("device memory", 0) == 0 ? Code::kUnimplemented : Code::kInvalidArgument,
               who + name + "': " + CollKindName(p.kind) + ": " + why);
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    auto earlier = latest_.find(name);
    std::shared_ptr<HandleState> still = earlier == latest_.end() ? nullptr : earlier->second.lock();
    if (stopped_ || shutdown_asked_) {
      s = Aborted(who + name + "' refused: " +
                  (stopped_ ? stop_cause_.message() : std::string("the tensor fusion runtime is shutting down")));
    } else if (still && !still->finished) {
      s = InvalidArgument(who + name +
                          "' submitted again while its earlier submission is still pending (wait for "
                          "it first, or give this one another name)");
    } else {
      latest_[name] = state;
      if (latest_.size() > 4096 + 2 * submitted_.size())  // names no longer used: drop the finished
        for (auto it = latest_.begin(); it != latest_.end();) {
          auto h = it->second.lock();
          it = !h || h->finished ? latest_.erase(it) : std::next(it);
        }
      while (!submitted_.empty() && submitted_.front()->finished) submitted_.pop_front();
      submitted_.push_back(state);
      Entry& e = incoming_.emplace_back(name, Entry{}).second;
      e.params = p;
      e.in = Located(in);  // the device ordinals found once, here (execute.cc reads them)
      e.out = Located(out);
      e.handle = state;
      e.submitted = Clock::now();
    }
  }
  if (!s.ok()) Complete(*state, s);
  return Handle(state);
}

Status Runtime::Synchronize(Deadline deadline) {
  std::vector<std::shared_ptr<HandleState>> waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiting.assign(submitted_.begin(), submitted_.end());
  }
  Status first;
  for (auto& h : waiting) {
    Status s = Handle(h).Wait(deadline);
    if (!s.ok() && first.ok()) first = s;
    if (s.code() == Code::kDeadlineExceeded) break;
  }
  return first;
}

Handle Runtime::Join(int* last_rank) {
  auto state = std::make_shared<HandleState>("join", Callback{});
  state->waiters = waiters_;
  const std::string who = "rank " + std::to_string(comm_.rank()) + ": join";
  Status s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!last_rank) {
      s = InvalidArgument(who + ": last_rank is NULL");
    } else if (stopped_ || shutdown_asked_) {
      s = Aborted(who + " refused: " +
                  (stopped_ ? stop_cause_.message() : std::string("the tensor fusion runtime is shutting down")));
    } else if (join_pending_) {
      s = InvalidArgument(who + " called again while this rank's earlier join is pending");
    } else {
      join_pending_ = true;
      join_incoming_ = state;
      join_last_incoming_ = last_rank;
    }
  }
  if (!s.ok()) Complete(*state, s);
  return Handle(state);
}

Status Runtime::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_asked_ = true;
  }
  wake_.notify_all();
  {
    std::lock_guard<std::mutex> lock(join_mu_);
    if (thread_.joinable()) thread_.join();
  }
  std::lock_guard<std::mutex> lock(mu_);
  return shut_down_ ? Status::Ok() : stop_cause_;
}

RuntimeStats Runtime::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

// ---- the background thread ----

void Runtime::Loop() {
  Status cause;
  const auto cycle =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(opts_.cycle_time_ms));
  while (true) {
    int shutdown_by = -1;
    cause = Cycle(&shutdown_by);
    {
      std::lock_guard<std::mutex> lock(timeline_mu_);
      timeline_.Flush();
    }
    if (!cause.ok()) break;
    if (shutdown_by >= 0) {
      cause = Aborted("the tensor fusion runtime was shut down (asked by rank " + std::to_string(shutdown_by) + ")");
      std::lock_guard<std::mutex> lock(mu_);
      shut_down_ = true;
      break;
    }
    // The next cycle is timed from the end of this one's exchange, a moment every rank shares:
    // timed from each rank's own start, ranks would keep their phase offsets for ever and every
    // exchange would wait them out.
    std::unique_lock<std::mutex> lock(mu_);
    wake_.wait_until(lock, exchanged_ + cycle, [&] { return shutdown_asked_; });
  }
  if (!shut_down_) HOOP_LOG(kError, "tensor fusion stopped: " << cause.message());
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    stop_cause_ = cause;
  }
  Drain();
  std::vector<std::string> left;
  for (auto& [name, e] : pending_) left.push_back(name);
  for (const std::string& name : left)
    Finish(name,
           Aborted("rank " + std::to_string(comm_.rank()) + ": tensor '" + name + "' did not run: " + cause.message()));
  if (join_) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      join_pending_ = false;
    }
    Complete(*std::exchange(join_, nullptr),
             Aborted("rank " + std::to_string(comm_.rank()) + ": join did not end: " + cause.message()));
  }
  std::lock_guard<std::mutex> lock(timeline_mu_);
  timeline_.Close();
}

void Runtime::Drain() {
  std::vector<std::pair<std::string, Entry>> in;
  {
    std::lock_guard<std::mutex> lock(mu_);
    in.swap(incoming_);
    if (join_incoming_) {
      join_ = std::move(join_incoming_);
      join_last_ = join_last_incoming_;
      join_reported_ = false;
    }
  }
  for (auto& [name, e] : in) {
    auto [it, fresh] = pending_.try_emplace(name, std::move(e));
    if (fresh) continue;
    Complete(*e.handle, InvalidArgument("rank " + std::to_string(comm_.rank()) + ": tensor '" + name +
                                        "' submitted again while its earlier submission is still pending"));
  }
}

Status Runtime::Cycle(int* shutdown_by) {
  Drain();
  bool asked;
  {
    std::lock_guard<std::mutex> lock(mu_);
    asked = shutdown_asked_;
  }
  const auto now = Clock::now();
  {
    std::lock_guard<std::mutex> lock(timeline_mu_);
    timeline_.MarkCycle(now);
  }
  bits_.assign(cache_.size(), 0);
  // A joined rank keeps the coordinator on: the others' tensors, cached or not, go to it, which
  // counts this rank as having every one of them.
  bool need = (comm_.rank() == 0 && negotiator_.Undecided()) || join_ != nullptr;
  for (auto& [name, e] : pending_) {
    if (e.reported) continue;
    e.slot = now - e.submitted < report_after_ ? cache_.Find(name, e.params) : -1;
    if (e.slot >= 0)
      bits_[static_cast<size_t>(e.slot)] = 1;
    else
      need = true;
  }
  const auto t0 = Clock::now();
  HOOP_ASSIGN_OR_RETURN(Readiness ready, negotiator_.ExchangeReadiness(need, asked, join_ != nullptr, bits_));
  some_joined_ = ready.some_joined;
  auto agreed_at = Clock::now();
  exchanged_ = agreed_at;
  std::vector<Response> agreed;
  slot_ready_.assign(cache_.size(), 0);
  for (size_t s : ready.ready_slots) {
    agreed.push_back({cache_.name(s), cache_.params(s), ""});
    slot_ready_[s] = 1;
    cache_.Touch(s);
  }
  const bool coordinate = ready.need_coordinator && ready.shutdown_by < 0;
  if (coordinate) {
    HOOP_ASSIGN_OR_RETURN(auto decided, negotiator_.Coordinate(Reports(agreed_at)));
    for (Response& d : decided) {
      if (d.error.empty() && d.join_last < 0) cache_.Put(d.name, d.params);
      agreed.push_back(std::move(d));
    }
  }
  const auto t1 = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.cycles;
    stats_.readiness_us += std::chrono::duration<double, std::micro>(agreed_at - t0).count();
    if (coordinate) {
      ++stats_.coordinated_cycles;
      stats_.coordinate_us += std::chrono::duration<double, std::micro>(t1 - agreed_at).count();
    }
  }
  HOOP_RETURN_IF_ERROR(RunAgreed(agreed, t1));
  *shutdown_by = ready.shutdown_by;
  return Status::Ok();
}

std::vector<Request> Runtime::Reports(Clock::time_point now) {
  std::vector<Request> mine;
  for (auto& [name, e] : pending_) {
    if (e.reported || (e.slot >= 0 && slot_ready_[static_cast<size_t>(e.slot)])) continue;
    auto age = std::chrono::duration_cast<std::chrono::milliseconds>(now - e.submitted).count();
    mine.push_back({name, e.params, static_cast<uint32_t>(std::min<int64_t>(age, UINT32_MAX))});
    e.reported = true;
  }
  if (join_ && !join_reported_) {
    Request j;
    j.join = true;
    mine.push_back(std::move(j));
    join_reported_ = true;
  }
  return mine;
}

Status Runtime::RunAgreed(const std::vector<Response>& agreed, Clock::time_point agreed_at) {
  std::vector<Member> members;
  std::vector<TensorParams> params;
  stand_ins_.clear();
  int join_last = -1;
  for (const Response& a : agreed) {
    if (a.join_last >= 0) {
      join_last = a.join_last;
      continue;
    }
    auto it = pending_.find(a.name);
    if (!a.error.empty()) {
      if (it != pending_.end()) Finish(a.name, a.timed_out ? DeadlineExceeded(a.error) : FailedPrecondition(a.error));
      continue;
    }
    if (it == pending_.end() && join_ && a.params.kind == CollKind::kAllreduce) {
      members.push_back(StandIn(a));
      params.push_back(a.params);
      continue;
    }
    if (it == pending_.end())
      return Internal("rank " + std::to_string(comm_.rank()) + ": tensor fusion agreed to run tensor '" + a.name +
                      "', which this rank has not submitted");
    Entry& e = it->second;
    e.agreed = agreed_at;
    {
      std::lock_guard<std::mutex> lock(timeline_mu_);
      timeline_.Span(it->first, "NEGOTIATE", e.submitted, agreed_at);
    }
    members.push_back({&it->first, &e.params, e.in, e.out, waiters_.get()});
    params.push_back(a.params);  // the agreed ones: every rank plans the same groups, whatever its memory
  }
  for (const FusionGroup& g : PlanFusion(params, opts_.fusion_threshold, comm_.size())) {
    std::vector<Member> group;
    for (size_t i : g.members) group.push_back(members[i]);
    GroupTimes t;
    Status s = RunGroup(comm_, group, fusion_, device_fusion_, &t);
    TimeGroup(group, g.bytes, t);
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.tensors += group.size();
      ++stats_.groups;
    }
    std::vector<std::string> names;
    for (const Member& m : group) names.push_back(*m.name);  // Finish erases the entries that hold them
    Finish(names, s);
    if (!s.ok()) return s;
  }
  stand_ins_.clear();
  return join_last >= 0 ? EndJoin(join_last) : Status::Ok();
}

void Runtime::TimeGroup(const std::vector<Member>& group, uint64_t bytes, const GroupTimes& t) {
  std::lock_guard<std::mutex> lock(timeline_mu_);
  if (!timeline_.on()) return;
  std::string args = "\"tensors\":" + std::to_string(group.size()) + ",\"bytes\":" + std::to_string(bytes);
  for (const Member& m : group) {
    auto it = pending_.find(*m.name);
    if (it == pending_.end()) continue;  // a stand-in of this joined rank's
    timeline_.Span(*m.name, "QUEUE", it->second.agreed, t.start);
    if (group.size() > 1) timeline_.Span(*m.name, "MEMCPY_IN_FUSION_BUFFER", t.start, t.packed, args);
    std::string op = CollKindName(m.params->kind);
    std::transform(op.begin(), op.end(), op.begin(), ::toupper);
    timeline_.Span(*m.name, op.c_str(), t.packed, t.reduced, args);
    if (group.size() > 1) timeline_.Span(*m.name, "MEMCPY_OUT_FUSION_BUFFER", t.reduced, t.end, args);
  }
}

Status Runtime::StartTimeline(const std::string& path, bool mark_cycles) {
  if (path.empty())
    return InvalidArgument("rank " + std::to_string(comm_.rank()) + ": start timeline: the file name is empty");
  std::lock_guard<std::mutex> lock(timeline_mu_);
  return timeline_.Open(path, comm_.rank(), mark_cycles)
      .WithContext("rank " + std::to_string(comm_.rank()) + ": start timeline");
}

void Runtime::StopTimeline() {
  std::lock_guard<std::mutex> lock(timeline_mu_);
  timeline_.Close();
}

Member Runtime::StandIn(const Response& a) {
  auto [it, fresh] = stand_ins_.try_emplace(a.name);
  StandInBuffer& b = it->second;
  b.params = a.params;
  b.params.mem = MemKind::kHost;  // this rank's stand-in lives in host memory, whatever the others'
  b.bytes.resize(a.params.count * DTypeSize(a.params.dtype));
  FillIdentity(a.params.dtype, a.params.op, a.params.prescale, b.bytes.data(), a.params.count);
  Buffer buf{b.bytes.data(), a.params.count, a.params.dtype, MemKind::kHost};
  return {&it->first, &b.params, buf, buf, waiters_.get()};
}

Status Runtime::EndJoin(int last) {
  if (!join_)
    return Internal("rank " + std::to_string(comm_.rank()) +
                    ": tensor fusion ended a join that this rank has not joined");
  *join_last_ = last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    join_pending_ = false;
  }
  some_joined_ = false;
  Complete(*std::exchange(join_, nullptr), Status::Ok());
  return Status::Ok();
}

void Runtime::Finish(const std::vector<std::string>& names, const Status& s) {
  done_.clear();
  for (const std::string& name : names) {
    auto it = pending_.find(name);
    if (it == pending_.end()) continue;
    done_.emplace_back(std::move(it->second.handle),
                       s.ok() ? s : Status(s.code(), "tensor '" + name + "': " + s.message()));
    pending_.erase(it);
  }
  CompleteAll(done_);
}

void Runtime::Finish(const std::string& name, Status s) {
  auto it = pending_.find(name);
  if (it == pending_.end()) return;
  std::shared_ptr<HandleState> h = std::move(it->second.handle);
  pending_.erase(it);
  Complete(*h, std::move(s));
}

}  // namespace hoop::fusion
