#include "collectives/core/executor.h"

#include "collectives/core/stall.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <sstream>

#include "collectives/kernels/reduce.h"

namespace hoop {

Status StagingPool::Reserve(Transport& transport, size_t slots, size_t bytes) {
  if (bytes > bytes_) {
    // The smaller chunks stay allocated: a back end may hold a registration of them by address
    // (ucx's RegisterStaging), which a new chunk at a freed one's address would wrongly find.
    for (auto& b : buffers_) retired_.push_back(std::move(b));
    buffers_.clear();
    regions_.clear();
    free_.clear();
    bytes_ = bytes;
  }
  // Every chunk is bytes_ long, also one added for a smaller call: a later call of bytes_ may get it.
  // Left unwritten: a page costs memory only once a message lands on it, so a back end of large
  // chunks (shm on a GPU host: 16 MiB x the window) costs small calls little. The chunks live as
  // long as the pool (transports may keep their registration: RegisterStaging).
  while (buffers_.size() < slots) {
    buffers_.push_back(std::make_unique_for_overwrite<char[]>(bytes_));
    HOOP_ASSIGN_OR_RETURN(Region r, transport.RegisterStaging(buffers_.back().get(), bytes_, MemKind::kHost));
    regions_.push_back(r);
    free_.push_back(regions_.size() - 1);
  }
  return Status::Ok();
}

Status StagingPool::ReserveDevice(Transport& transport, DeviceQueue& queue, size_t slots, size_t bytes) {
  HOOP_ASSIGN_OR_RETURN(char* base, queue.Scratch(kScratchChunks, slots * bytes));
  buffers_.clear();
  regions_.clear();
  free_.clear();
  bytes_ = bytes;
  for (size_t i = 0; i < slots; ++i) {
    HOOP_ASSIGN_OR_RETURN(Region r, transport.RegisterStaging(base + i * bytes, bytes, MemKind::kCuda));
    regions_.push_back(r);
    free_.push_back(i);
  }
  return Status::Ok();
}

StatusOr<size_t> StagingPool::AcquireOrGrow(Transport& transport) {
  if (free_.empty()) HOOP_RETURN_IF_ERROR(Reserve(transport, buffers_.size() + 1, bytes_));
  return Acquire();
}

size_t StagingPool::Acquire() {
  size_t s = free_.back();
  free_.pop_back();
  return s;
}

namespace {

class Run {
 public:
  Run(Transport& t, StagingPool& pool, ExecState& st, const ExecArgs& a)
      : t_(t),
        pool_(&pool),
        s_(st),
        a_(a),
        plan_(*a.plan),
        units_(plan_.units),
        steps_(plan_.schedule.steps),
        esize_(DTypeSize(a.dtype)),
        aliased_(Overlap(a.in, a.out)) {}

  Status Go() {
    const size_t n = units_.size();
    if (n == 0) return Status::Ok();
    s_.recv_done.assign(n, 0);
    s_.acted.assign(n, 0);
    s_.slot.assign(n, -1);
    s_.sinks.resize(n);
    s_.sends_left.resize(n);
    for (size_t u = 0; u < n; ++u) s_.sends_left[u] = static_cast<uint32_t>(StepOf(u).send_peers.size());
    s_.send_cursor.assign(plan_.sends.size(), 0);
    s_.deps_left.assign(plan_.dep_count.begin(), plan_.dep_count.end());
    // Only schedules that reduce need a kernel (a bool broadcast carries op sum, which has none).
    const bool reduces = std::any_of(plan_.schedule.steps.begin(), plan_.schedule.steps.end(),
                                     [](const Step& st) { return st.recv == RecvKind::kReduce || !st.fold.empty(); });
    if (q_ && (a_.compression != Compression::kNone || a_.memory))
      return Internal(a_.what() + ": a device run with compression or a memory seam");
    if (reduces && q_) {
      if (plan_.schedule.min_window > 0) return Unimplemented(a_.what() + ": the fold runs on host memory only");
      if (!q_->CanReduce(a_.dtype, a_.op))
        return Unimplemented(a_.what() + ": no device reduction kernel for this data");
    } else if (reduces) {
      reduce_ = LookupReduce(a_.dtype, a_.op, a_.in.kind);
      if (!reduce_) return Unimplemented(a_.what() + ": no reduction kernel for this memory");
      stream_ = LookupReduceStreaming(a_.dtype, a_.op, a_.in.kind);
    }
    const size_t chunk_elems = std::max<size_t>(1, a_.chunk_bytes / esize_);
    if (a_.compression != Compression::kNone) {
      wire_ = HostVisible(a_.in.kind) ? LookupWire(a_.dtype, a_.compression) : nullptr;
      if (!wire_) return Unimplemented(a_.what() + ": no " + CompressionName(a_.compression) + " codec for this data");
      s_.send_slot.assign(n, -1);
      HOOP_RETURN_IF_ERROR(s_.wire_sends.Reserve(t_, 0, WireBytes(chunk_elems)));
    }
    // A fold's held messages stay in flight until their chunk folds: room for two chunks' worth.
    const size_t window = std::max(a_.window * static_cast<size_t>(std::max(1, plan_.schedule.window_scale)),
                                   2 * static_cast<size_t>(plan_.schedule.min_window));
    if (q_) {
      pool_ = &s_.device_chunks;
      HOOP_RETURN_IF_ERROR(pool_->ReserveDevice(t_, *q_, window, chunk_elems * esize_).WithContext(a_.what()));
    } else {
      HOOP_RETURN_IF_ERROR(pool_->Reserve(t_, window, wire_ ? WireBytes(chunk_elems) : chunk_elems * esize_));
    }
    if (a_.memory) HOOP_RETURN_IF_ERROR(a_.memory->Begin(plan_, esize_));

    std::vector<Completion>& done = s_.done;
    while (true) {
      while (next_ < n && inflight_ < window && error_.ok()) Start(next_++);
      if (!error_.ok()) return error_;
      if (acted_count_ == n && pending_sends_ == 0) return Status::Ok();
      done.clear();
      Where();
      Status s = t_.Poll(&done, a_.interrupt ? a_.deadline.Earlier(Deadline::After(a_.look)) : a_.deadline, a_.gate);
      if (s.code() == Code::kDeadlineExceeded) {
        if (a_.interrupt && a_.interrupt->load(std::memory_order_acquire)) return a_.revoked();
        if (!a_.deadline.Expired()) continue;
        return TimeoutError();
      }
      if (!s.ok()) return s;  // the connections failed under another communicator (shared_transport.h)
      for (const Completion& c : done) {
        if (c.op_id >> 63) {  // point-to-point traffic (mailbox.h)
          if (a_.foreign) a_.foreign(c);
          continue;
        }
        if (!c.status.ok()) return CompletionError(c);
        size_t u = static_cast<size_t>(c.op_id >> 1);
        if (c.is_send) {
          --pending_sends_;
          if (--s_.sends_left[u] > 0) continue;
          if (wire_ && s_.send_slot[u] >= 0) {
            s_.wire_sends.Release(static_cast<size_t>(s_.send_slot[u]));
            s_.send_slot[u] = -1;
          }
          const int waiter = plan_.send_waiter[u];
          if (waiter >= 0) TryAct(static_cast<size_t>(waiter));
        } else {
          s_.recv_done[u] = 1;
          TryAct(u);
        }
      }
      if (!error_.ok()) return error_;
    }
  }

 private:
  const Step& StepOf(size_t u) const { return steps_[static_cast<size_t>(units_[u].step)]; }
  static bool Overlap(const Region& a, const Region& b) {
    const char *x = static_cast<const char*>(a.base), *y = static_cast<const char*>(b.base);
    return a.bytes > 0 && b.bytes > 0 && x < y + b.bytes && y < x + a.bytes;
  }
  // Whether unit u must wait for its own earlier send (after_sent): always, unless that send read
  // `in` and this run's `in` and `out` are distinct memory.
  bool WaitsForSend(size_t u) const {
    const int d = units_[u].sent_dep;
    return d >= 0 && (aliased_ || !StepOf(static_cast<size_t>(d)).send_from_in);
  }
  bool SendPending(size_t u) const {
    if (!WaitsForSend(u)) return false;
    const size_t d = static_cast<size_t>(units_[u].sent_dep);
    return !s_.acted[d] || s_.sends_left[d] > 0;
  }

  void Start(size_t u) {
    const Step& st = StepOf(u);
    const Unit& un = units_[u];
    // A reduction may run inside Poll, as its message comes (PostToSink): what it reads must be
    // readable before the receive is posted; and a receive may land where it writes at once,
    // which staged in place must not happen before that memory's copy in (pipelined_staging.h).
    if ((st.recv != RecvKind::kNone || !st.fold.empty()) && !Readable(u)) return;
    if (st.recv == RecvKind::kNone) {
      s_.recv_done[u] = 1;
      TryAct(u);
      return;
    }
    Endpoint* ep = t_.endpoint(st.recv_peer);
    Tag tag{MatchTag(a_.seq, un.chunk, st.recv_msg), a_.check};
    size_t len = MessageBytes(un.count);
    // In place only once acting: the data could land before our own send of that memory is read.
    // Compressed data is always staged: it is decoded, not landed.
    const bool early_ok = !WaitsForSend(u) && !wire_ && st.recv != RecvKind::kHold;
    if (st.recv == RecvKind::kCopy && early_ok && (q_ || !(stage_copies_ && a_.out.bytes >= kStreamingBytes))) {
      ep->PostRecv(a_.out, (st.out_offset + un.offset) * esize_, len, tag, u << 1);
    } else if (early_ok && PostToSink(ep, u, len, tag)) {
      // Land() does the unit's work as the pieces arrive; acting on it only releases its sends.
    } else {
      size_t slot = pool_->Acquire();
      s_.slot[u] = static_cast<int>(slot);
      ep->PostRecv(pool_->region(slot), 0, len, tag, u << 1);
    }
    ++inflight_;
  }

  // Whether what unit u reads of `in` (and of `out` before the run wrote it) is readable: the
  // memory seam's say, at once without one. On an error the run ends with it.
  bool Readable(size_t u) {
    if (!a_.memory) return true;
    Status s = a_.memory->BeforeRead(u);
    if (!s.ok() && error_.ok()) error_ = s.WithContext(a_.what());
    return s.ok();
  }

  // A unit that depends on no other's action can have its data reduced or copied into place the
  // moment it arrives, straight out of the back end's memory, where the back end allows it.
  bool PostToSink(Endpoint* ep, size_t u, size_t len, Tag tag) {
    if (plan_.dep_count[u] > 0 || StepOf(u).accumulate || StepOf(u).recv == RecvKind::kHold) return false;
    UnitSink& sink = s_.sinks[u];
    sink.land = &Run::LandThunk;
    sink.run = this;
    sink.unit = u;
    sink.dev = q_ ? q_->device() : -1;
    return ep->PostRecvTo(&sink, len, esize_, tag, u << 1);
  }
  static void LandThunk(void* run, size_t u, size_t off, const void* data, size_t len) {
    static_cast<Run*>(run)->Land(u, off, data, len);
  }

  // Acts on unit u if it can, then on every unit that was waiting only for it, and so on.
  void TryAct(size_t u) {
    std::vector<size_t>& ready = s_.ready;
    ready.clear();
    while (true) {
      if (Act(u)) {
        for (uint32_t i = plan_.dependents_at[u]; i < plan_.dependents_at[u + 1]; ++i) {
          const size_t v = static_cast<size_t>(plan_.dependents[i]);
          if (--s_.deps_left[v] == 0) ready.push_back(v);
        }
      }
      if (ready.empty()) return;
      u = ready.back();
      ready.pop_back();
    }
  }

  // Acts on unit u if its data is in and everything it waits for is done; says whether it did.
  bool Act(size_t u) {
    if (s_.acted[u] || !s_.recv_done[u] || s_.deps_left[u] > 0) return false;
    if (SendPending(u)) return false;  // TryAct runs again when that send completes
    const Unit& un = units_[u];
    const Step& st = StepOf(u);
    if (st.recv == RecvKind::kHold) {  // its message waits in its chunk for the fold
      s_.acted[u] = 1;
      ++acted_count_;
      return true;
    }
    if (!st.fold.empty()) FoldUnit(u);
    if (s_.slot[u] >= 0) {  // staged: the unit's data waits in a staging chunk
      size_t slot = static_cast<size_t>(s_.slot[u]);
      if (wire_)
        LandWire(u, static_cast<const char*>(pool_->region(slot).base));
      else
        Land(u, 0, pool_->region(slot).base, un.count * esize_);
      pool_->Release(slot);
      s_.slot[u] = -1;
    }
    s_.acted[u] = 1;
    ++acted_count_;
    if (a_.memory && (st.recv != RecvKind::kNone || !st.fold.empty())) {
      Status s = a_.memory->AfterAct(u);
      if (!s.ok() && error_.ok()) error_ = s.WithContext(a_.what());
    }
    // A unit holds its window place (and staging chunk) until it has acted, not merely until
    // its data landed: one waiting on after_previous still holds its staged chunk.
    if (st.recv != RecvKind::kNone) --inflight_;
    for (int p : st.send_peers) AdvanceSends(p);
    return true;
  }

  // Does unit u's work on `len` received bytes at byte `off` of its message: reduces them with
  // the step's source into `out`, or copies them there. Large outputs are written with
  // non-temporal stores (kernels/reduce.h) unless the result is sent on.
  void Land(size_t u, size_t off, const void* data, size_t len) {
    const Step& st = StepOf(u);
    const Unit& un = units_[u];
    char* out = static_cast<char*>(a_.out.base) + (st.out_offset + un.offset) * esize_ + off;
    // A result this rank sends on next is written with plain stores, so the send finds it in cache.
    const bool sent_on = !st.send_peers.empty() && !st.send_from_in;
    const bool stream = a_.out.bytes >= kStreamingBytes && !sent_on;
    if (st.recv == RecvKind::kReduce) {
      const char* src =
          st.accumulate ? out : static_cast<const char*>(a_.in.base) + (st.in_offset + un.offset) * esize_ + off;
      int divisor = st.finalize && a_.op == ReduceOp::kAvg ? a_.nranks : 0;
      const void* left = st.recv_left ? data : src;
      const void* right = st.recv_left ? src : data;
      if (q_)
        Queued(q_->Reduce(a_.dtype, a_.op, out, left, right, len / esize_, divisor));
      else if (stream && stream_)
        stream_(out, left, right, len / esize_, divisor);
      else if (stream)
        ReduceStreaming(reduce_, esize_, out, left, right, len / esize_, divisor);
      else
        reduce_(out, left, right, len / esize_, divisor);
    } else if (q_) {
      Queued(q_->Copy(out, MemKind::kCuda, data, MemKind::kCuda, len));
    } else if (stream) {
      CopyStreaming(out, data, len);
    } else {
      std::memcpy(out, data, len);
    }
  }

  // A fold unit's work: its operands (held messages, or `in`) folded in order into `out`; their
  // staging chunks and window places are then free.
  void FoldUnit(size_t u) {
    const Step& st = StepOf(u);
    const Unit& un = units_[u];
    const size_t k = un.fold.size();
    if (k < 2) {
      if (error_.ok()) error_ = Internal(a_.what() + ": a fold of " + std::to_string(k) + " operands");
      return;
    }
    std::vector<const void*>& srcs = s_.fold_srcs;
    srcs.resize(k);
    for (size_t i = 0; i < k; ++i) {
      const int h = un.fold[i];
      srcs[i] = h < 0 ? static_cast<const char*>(a_.in.base) + (st.in_offset + un.offset) * esize_
                      : pool_->region(static_cast<size_t>(s_.slot[static_cast<size_t>(h)])).base;
    }
    char* out = static_cast<char*>(a_.out.base) + (st.out_offset + un.offset) * esize_;
    const bool sent_on = !st.send_peers.empty();
    const int divisor = st.finalize && a_.op == ReduceOp::kAvg ? a_.nranks : 0;
    Fold(reduce_, esize_, out, srcs.data(), static_cast<int>(k), un.count, divisor,
         a_.out.bytes >= kStreamingBytes && !sent_on);
    for (int h : un.fold) {
      if (h < 0) continue;
      pool_->Release(static_cast<size_t>(s_.slot[static_cast<size_t>(h)]));
      s_.slot[static_cast<size_t>(h)] = -1;
      --inflight_;
    }
  }

  void Queued(const Status& s) {
    if (!s.ok() && error_.ok()) error_ = s.WithContext(a_.what() + ": queueing device work");
  }

  size_t MessageBytes(size_t count) const { return wire_ ? WireBytes(count) : count * esize_; }

  // Land() for a compressed message (kernels/wire.h): decodes it, adding it to the step's source
  // (and this rank's residual) or copying it into `out`. A result that is sent on is encoded at
  // once and `out` gets the rounded values, what every other rank will decode; a copy that is
  // sent on forwards the message as it came.
  void LandWire(size_t u, const char* msg) {
    const Step& st = StepOf(u);
    const Unit& un = units_[u];
    WireHeader h;
    std::memcpy(&h, msg, sizeof h);
    if (h.count != static_cast<uint32_t>(un.count)) {
      error_ = Internal(a_.what() + ": a compressed chunk from rank " + std::to_string(st.recv_peer) + " holds " +
                        std::to_string(h.count) + " values, not " + std::to_string(un.count));
      return;
    }
    const auto* w = reinterpret_cast<const uint16_t*>(msg + sizeof h);
    const double inv = std::ldexp(1.0, -h.scale_exp);
    char* out = static_cast<char*>(a_.out.base) + (st.out_offset + un.offset) * esize_;
    const bool sent_on = !st.send_peers.empty() && !st.send_from_in;
    if (st.recv == RecvKind::kCopy) {
      wire_->decode(out, w, un.count, inv);
      if (!sent_on) return;
      auto slot = s_.wire_sends.AcquireOrGrow(t_);
      if (!slot.ok()) {
        error_ = slot.status().WithContext(a_.what());
        return;
      }
      std::memcpy(s_.wire_sends.region(*slot).base, msg, WireBytes(un.count));
      s_.send_slot[u] = static_cast<int>(*slot);
      return;
    }
    const size_t in_at = (st.in_offset + un.offset) * esize_;
    const char* src = st.accumulate ? out : static_cast<const char*>(a_.in.base) + in_at;
    char* res = residual_ && !st.accumulate ? residual_ + in_at : nullptr;
    const int divisor = st.finalize && a_.op == ReduceOp::kAvg ? a_.nranks : 0;
    wire_->decode_add(out, src, res, w, un.count, inv, divisor);
    if (sent_on)
      EncodeSend(u, out, nullptr, res, out, divisor > 1 ? divisor : 1);
    else if (res)
      std::memset(res, 0, un.count * esize_);  // nothing of this rank's was rounded
  }

  // Encodes unit u's data x (+ add) into a send chunk; see WireKernels::encode for res/round.
  void EncodeSend(size_t u, const char* x, const char* add, char* res, char* round, double res_mult) {
    const size_t count = units_[u].count;
    auto slot = s_.wire_sends.AcquireOrGrow(t_);
    if (!slot.ok()) {
      error_ = slot.status().WithContext(a_.what());
      return;
    }
    char* base = static_cast<char*>(s_.wire_sends.region(*slot).base);
    const WireHeader h{WireScaleExponent(wire_->absmax(x, add, count), a_.dtype), static_cast<uint32_t>(count)};
    std::memcpy(base, &h, sizeof h);
    wire_->encode(reinterpret_cast<uint16_t*>(base + sizeof h), round, x, add, res, count, std::ldexp(1.0, h.scale_exp),
                  std::ldexp(1.0, -h.scale_exp), res_mult);
    s_.send_slot[u] = static_cast<int>(*slot);
  }

  // Posts, in unit order, every send to `peer` whose data is ready.
  void AdvanceSends(int peer) {
    size_t e = 0;
    while (plan_.sends[e].first != peer) ++e;
    const std::vector<int>& order = plan_.sends[e].second;
    size_t& cur = s_.send_cursor[e];
    Endpoint* ep = t_.endpoint(peer);
    while (cur < order.size() && s_.acted[static_cast<size_t>(order[cur])]) {
      size_t u = static_cast<size_t>(order[cur++]);
      const Step& st = StepOf(u);
      const Unit& un = units_[u];
      if (!Readable(u)) return;  // from `in`, or from `out` placed before the run
      Tag tag{MatchTag(a_.seq, un.chunk, st.send_msg), a_.check};
      size_t len = un.count * esize_;
      if (wire_) {
        if (s_.send_slot[u] < 0) {  // not encoded when it landed: a send of this rank's input
          char* res = st.send_from_in && residual_ ? residual_ + (st.in_offset + un.offset) * esize_ : nullptr;
          const Region& src = st.send_from_in ? a_.in : a_.out;
          const size_t at = (st.send_from_in ? st.in_offset : st.out_offset) + un.offset;
          EncodeSend(u, static_cast<const char*>(src.base) + at * esize_, res, res, nullptr, 1);
          if (!error_.ok()) return;
        }
        ep->PostSend(s_.wire_sends.region(static_cast<size_t>(s_.send_slot[u])), 0, MessageBytes(un.count), tag,
                     (u << 1) | 1);
      } else if (st.send_from_in)
        ep->PostSend(a_.in, (st.in_offset + un.offset) * esize_, len, tag, (u << 1) | 1);
      else
        ep->PostSend(a_.out, (st.out_offset + un.offset) * esize_, len, tag, (u << 1) | 1);
      ++pending_sends_;
    }
  }

  Status CompletionError(const Completion& c) {
    if (c.status.code() == Code::kFailedPrecondition && c.peer_check != 0 && c.peer_check != a_.check &&
        a_.explain_mismatch)
      return FailedPrecondition(a_.what() + ": ranks disagree: " + a_.explain_mismatch(c.peer_check, c.peer));
    std::string dir = c.is_send ? "sending to rank " : "receiving from rank ";
    return Status(c.status.code(), a_.what() + ": " + dir + std::to_string(c.peer) + ": " + c.status.message());
  }

  Status TimeoutError() {
    std::set<int> waiting;
    for (size_t u = 0; u < next_; ++u)
      if (!s_.recv_done[u]) waiting.insert(StepOf(u).recv_peer);
    std::ostringstream os;
    os << a_.what() << ": ";
    SayTimedOut(os, a_.timeout_s, a_.timeout_name);
    if (!waiting.empty()) {
      os << " waiting for rank";
      if (waiting.size() > 1) os << "s";
      const char* sep = " ";
      for (int p : waiting) {
        os << sep << p;
        sep = ", ";
      }
    } else {
      os << " with sends still queued";
    }
    if (a_.waiting_for) a_.waiting_for->assign(waiting.begin(), waiting.end());
    return DeadlineExceeded(os.str());
  }

  Transport& t_;
  StagingPool* pool_;  // the communicator's, or the device run's chunks
  ExecState& s_;
  const ExecArgs& a_;
  const Plan& plan_;
  const std::vector<Unit>& units_;
  const std::vector<Step>& steps_;
  const size_t esize_;
  const bool aliased_;  // in and out share memory (in place)
  ReduceFn reduce_ = nullptr;
  ReduceFn stream_ = nullptr;          // the non-temporal variant, where there is one
  const WireKernels* wire_ = nullptr;  // compression's codec, or null
  char* const residual_ = static_cast<char*>(a_.residual);
  Status error_;  // the first failure inside a completion handler
  const bool stage_copies_ = t_.StageLargeCopies();
  DeviceQueue* const q_ = a_.queue;  // a device run's
  size_t next_ = 0, inflight_ = 0, acted_count_ = 0, pending_sends_ = 0;
  size_t oldest_ = 0;  // no unit before it is left to act

  // The flight recorder's step and chunk: those of the oldest unit not done (the last unit's
  // while only sends are left).
  void Where() {
    if (!a_.waits || plan_.units.empty()) return;
    while (oldest_ + 1 < plan_.units.size() && s_.acted[oldest_]) ++oldest_;
    const Unit& u = plan_.units[oldest_];
    a_.waits(static_cast<uint32_t>(u.step), u.chunk);
  }
};

}  // namespace

Status Execute(Transport& transport, StagingPool& staging, ExecState& state, const ExecArgs& args) {
  return Run(transport, staging, state, args).Go();
}

}  // namespace hoop
