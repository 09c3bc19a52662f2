#include "collectives/executor.h"

#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "collectives/kernels/reduce.h"

namespace hoop {

Status StagingPool::Reserve(Transport& transport, size_t slots, size_t bytes) {
  if (bytes != bytes_) {
    buffers_.clear();
    regions_.clear();
    free_.clear();
    bytes_ = bytes;
  }
  while (buffers_.size() < slots) {
    buffers_.push_back(std::make_unique<char[]>(bytes));
    HOOP_ASSIGN_OR_RETURN(Region r, transport.RegisterStaging(buffers_.back().get(), bytes, MemKind::kHost));
    regions_.push_back(r);
    free_.push_back(regions_.size() - 1);
  }
  return Status::Ok();
}

size_t StagingPool::Acquire() {
  size_t s = free_.back();
  free_.pop_back();
  return s;
}

namespace {

uint64_t MatchTag(uint32_t seq, uint32_t chunk, uint16_t msg) {
  return (uint64_t(seq & 0xffffff) << 40) | (uint64_t(chunk & 0xffffff) << 16) | msg;
}

class Run {
 public:
  Run(Transport& t, StagingPool& pool, const ExecArgs& a)
      : t_(t), pool_(pool), a_(a), steps_(a.schedule->steps), esize_(DTypeSize(a.dtype)) {}

  Status Go() {
    size_t chunk_elems = std::max<size_t>(1, a_.chunk_bytes / esize_);
    units_ = ExpandUnits(*a_.schedule, chunk_elems);
    const size_t n = units_.size();
    if (n == 0) return Status::Ok();
    recv_done_.assign(n, false);
    acted_.assign(n, false);
    slot_.assign(n, -1);
    sinks_.assign(n, UnitSink{});
    dependent_.assign(n, -1);
    for (size_t u = 0; u < n; ++u) {
      if (units_[u].dep >= 0) dependent_[static_cast<size_t>(units_[u].dep)] = static_cast<int>(u);
      for (int p : steps_[static_cast<size_t>(units_[u].step)].send_peers) send_order_[p].push_back(static_cast<int>(u));
    }
    reduce_ = LookupReduce(a_.dtype, a_.op, a_.in.kind);
    if (!reduce_) return Unimplemented(a_.what() + ": no reduction kernel for this memory");
    HOOP_RETURN_IF_ERROR(pool_.Reserve(t_, a_.window, chunk_elems * esize_));

    std::vector<Completion> done;
    while (true) {
      while (next_ < n && inflight_ < a_.window) Start(next_++);
      if (acted_count_ == n && pending_sends_ == 0) return Status::Ok();
      done.clear();
      Status s = t_.Poll(&done, a_.deadline);
      if (!s.ok()) return TimeoutError();
      for (const Completion& c : done) {
        if (!c.status.ok()) return CompletionError(c);
        size_t u = static_cast<size_t>(c.op_id >> 1);
        if (c.is_send) {
          --pending_sends_;
        } else {
          recv_done_[u] = true;
          TryAct(u);
        }
      }
    }
  }

 private:
  const Step& StepOf(size_t u) const { return steps_[static_cast<size_t>(units_[u].step)]; }

  void Start(size_t u) {
    const Step& st = StepOf(u);
    const Unit& un = units_[u];
    if (st.recv == RecvKind::kNone) {
      recv_done_[u] = true;
      TryAct(u);
      return;
    }
    Endpoint* ep = t_.endpoint(st.recv_peer);
    Tag tag{MatchTag(a_.seq, un.chunk, st.recv_msg), a_.check};
    size_t len = un.count * esize_;
    if (st.recv == RecvKind::kCopy && !(stage_copies_ && a_.out.bytes >= kStreamingBytes)) {
      ep->PostRecv(a_.out, (st.out_offset + un.offset) * esize_, len, tag, u << 1);
    } else if (PostToSink(ep, u, len, tag)) {
      // Land() does the unit's work as the pieces arrive; acting on it only releases its sends.
    } else {
      size_t slot = pool_.Acquire();
      slot_[u] = static_cast<int>(slot);
      ep->PostRecv(pool_.region(slot), 0, len, tag, u << 1);
    }
    ++inflight_;
  }

  // A unit that depends on no other's action can have its data reduced or copied into place the
  // moment it arrives, straight out of the back end's memory, where the back end allows it.
  bool PostToSink(Endpoint* ep, size_t u, size_t len, Tag tag) {
    if (units_[u].dep >= 0 || StepOf(u).accumulate) return false;
    sinks_[u] = UnitSink(this, u);
    return ep->PostRecvTo(&sinks_[u], len, esize_, tag, u << 1);
  }

  void TryAct(size_t u) {
    while (true) {
      if (acted_[u] || !recv_done_[u]) return;
      const Unit& un = units_[u];
      if (un.dep >= 0 && !acted_[static_cast<size_t>(un.dep)]) return;
      const Step& st = StepOf(u);
      if (slot_[u] >= 0) {  // staged: the unit's data waits in a staging chunk
        size_t slot = static_cast<size_t>(slot_[u]);
        Land(u, 0, pool_.region(slot).base, un.count * esize_);
        pool_.Release(slot);
        slot_[u] = -1;
      }
      acted_[u] = true;
      ++acted_count_;
      // A unit holds its window place (and staging chunk) until it has acted, not merely until
      // its data landed: one waiting on after_previous still holds its staged chunk.
      if (st.recv != RecvKind::kNone) --inflight_;
      for (int p : st.send_peers) AdvanceSends(p);
      if (dependent_[u] < 0) return;
      u = static_cast<size_t>(dependent_[u]);
    }
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
      const char* src = st.accumulate ? out : static_cast<const char*>(a_.in.base) + (st.in_offset + un.offset) * esize_ + off;
      int divisor = st.finalize && a_.op == ReduceOp::kAvg ? a_.nranks : 0;
      if (stream) ReduceStreaming(reduce_, esize_, out, src, data, len / esize_, divisor);
      else reduce_(out, src, data, len / esize_, divisor);
    } else if (stream) {
      CopyStreaming(out, data, len);
    } else {
      std::memcpy(out, data, len);
    }
  }

  // Hands a receive's pieces to Land() as the back end delivers them (Endpoint::PostRecvTo).
  struct UnitSink final : RecvSink {
    Run* run = nullptr;
    size_t u = 0;
    UnitSink() = default;
    UnitSink(Run* r, size_t unit) : run(r), u(unit) {}
    void Consume(size_t off, const void* data, size_t len) override { run->Land(u, off, data, len); }
  };

  // Posts, in unit order, every send to `peer` whose data is ready.
  void AdvanceSends(int peer) {
    std::vector<int>& order = send_order_[peer];
    size_t& cur = send_cursor_[peer];
    Endpoint* ep = t_.endpoint(peer);
    while (cur < order.size() && acted_[static_cast<size_t>(order[cur])]) {
      size_t u = static_cast<size_t>(order[cur++]);
      const Step& st = StepOf(u);
      const Unit& un = units_[u];
      Tag tag{MatchTag(a_.seq, un.chunk, st.send_msg), a_.check};
      size_t len = un.count * esize_;
      if (st.send_from_in) ep->PostSend(a_.in, (st.in_offset + un.offset) * esize_, len, tag, (u << 1) | 1);
      else ep->PostSend(a_.out, (st.out_offset + un.offset) * esize_, len, tag, (u << 1) | 1);
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
      if (!recv_done_[u]) waiting.insert(StepOf(u).recv_peer);
    std::ostringstream os;
    os << a_.what() << ": timed out after " << a_.timeout_s << " s (HOOP_TIMEOUT)";
    if (!waiting.empty()) {
      os << " waiting for rank";
      if (waiting.size() > 1) os << "s";
      const char* sep = " ";
      for (int p : waiting) {
        os << sep << p;
        sep = ", ";
      }
      os << "; did every rank call the same collectives in the same order?";
    } else {
      os << " with sends still queued";
    }
    return DeadlineExceeded(os.str());
  }

  Transport& t_;
  StagingPool& pool_;
  const ExecArgs& a_;
  const std::vector<Step>& steps_;
  const size_t esize_;
  ReduceFn reduce_ = nullptr;
  const bool stage_copies_ = t_.StageLargeCopies();
  std::vector<Unit> units_;
  std::vector<bool> recv_done_, acted_;
  std::vector<UnitSink> sinks_;
  std::vector<int> slot_, dependent_;
  std::map<int, std::vector<int>> send_order_;
  std::map<int, size_t> send_cursor_;
  size_t next_ = 0, inflight_ = 0, acted_count_ = 0, pending_sends_ = 0;
};

}  // namespace

Status Execute(Transport& transport, StagingPool& staging, const ExecArgs& args) {
  return Run(transport, staging, args).Go();
}

}  // namespace hoop
