#include "collectives/core/flight_recorder.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <ctime>
#include <thread>

#include "common/json_text.h"

namespace hoop {

namespace {

constexpr size_t kErrorChars = 240, kWaitPeers = 16, kNameChars = 95;
constexpr auto kRelaxed = std::memory_order_relaxed;
constexpr uint8_t kNoAlgo = 0xff;  // a point-to-point call, or one not started

// The kernel's coarse monotonic clock: a read of what the last tick wrote (a few ns, where a
// precise clock costs tens: too much beside a 0.5 us allreduce), at the tick's resolution (1 to
// 4 ms), which is what telling where a hung job is takes.
int64_t Now() {
  timespec t;
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

}  // namespace

const char* TraceStateName(TraceState s) {
  switch (s) {
    case TraceState::kQueued: return "queued";
    case TraceState::kStarted: return "started";
    case TraceState::kDone: return "done";
    case TraceState::kFailed: return "failed";
  }
  return "?";
}

// Every field an atomic, written between the version's two steps (odd: being written) and read
// between two equal even readings of it: a seqlock, its fields race-free by construction. What
// every operation writes fills two cache lines; a failure's message and peers live apart (Cold),
// touched only when one fails: an operation's recording costs the lines it writes.
//
// Who writes a slot: records are made one at a time (a communicator's turn: whichever thread
// runs its operations), each claiming the next id and its slot with plain stores; from then until
// the operation ends, the thread running it (the turn's holder, or the mailbox completing a send
// or receive) is the slot's only writer. No read-modify-write anywhere: a locked instruction
// waits for the caller's earlier stores, the messages it just wrote to shared memory, to leave
// its core (a third of the recorder's cost in a half-microsecond allreduce, when it had two).
// A claim never takes the slot of an operation still queued or started: that one is what a hung
// job's dump is for, so the newer one goes unrecorded (counted in dropped()).
struct alignas(64) FlightRecorder::Slot {
  std::atomic<uint64_t> version{0};
  std::atomic<uint64_t> id{0}, count{0};
  std::atomic<int64_t> seq{-1}, queued_ns{0}, started_ns{-1}, ended_ns{-1};
  std::atomic<int32_t> root{-1}, peer{-1}, tag{0};
  std::atomic<uint32_t> step{0}, chunk{0};
  std::atomic<uint8_t> kind{0}, p2p{0}, dtype{0}, mem{0}, stream{0}, state{0}, waits{0}, algo{kNoAlgo};
  std::atomic<uint16_t> error_len{0};
  std::atomic<uint8_t> name_len{0};

  void Begin() {
    version.store(version.load(kRelaxed) + 1, kRelaxed);
    std::atomic_thread_fence(std::memory_order_release);
  }
  void End() { version.store(version.load(kRelaxed) + 1, std::memory_order_release); }
  bool InFlight() const {
    const auto st = static_cast<TraceState>(state.load(std::memory_order_acquire));
    return id.load(kRelaxed) != 0 && (st == TraceState::kQueued || st == TraceState::kStarted);
  }
};

struct FlightRecorder::Cold {
  std::atomic<char> error[kErrorChars];
  std::atomic<int32_t> wait[kWaitPeers];
};

struct FlightRecorder::Names {
  std::atomic<char> text[kNameChars];
};

namespace {
size_t PowerOfTwo(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return n ? p : 0;
}
}  // namespace

FlightRecorder::FlightRecorder(size_t capacity)
    : capacity_(PowerOfTwo(capacity)),
      mask_(capacity_ ? capacity_ - 1 : 0),
      slots_(capacity_ ? new Slot[capacity_] : nullptr),
      begin_ns_(Now()) {}

FlightRecorder::~FlightRecorder() {
  delete[] cold_.load(std::memory_order_acquire);
  delete[] names_.load(std::memory_order_acquire);
}

FlightRecorder::Cold* FlightRecorder::ColdFor(uint64_t id) {
  Cold* cold = cold_.load(std::memory_order_acquire);
  if (!cold) {
    Cold* made = new Cold[capacity_];
    if (cold_.compare_exchange_strong(cold, made, std::memory_order_acq_rel))
      cold = made;
    else
      delete[] made;  // another thread's failure made it first: `cold` is that one
  }
  return &cold[(id - 1) & mask_];
}

// The running operation's slot, or null where it went unrecorded (inline: called on every
// operation, never through the library's symbol table).
inline FlightRecorder::Slot* FlightRecorder::Owned(uint64_t id) const {
  if (id == 0) return nullptr;
  Slot& s = slots_[(id - 1) & mask_];
  return s.id.load(kRelaxed) == id ? &s : nullptr;
}

uint64_t FlightRecorder::Claim(const TraceCall& c, bool started, int64_t seq, Algo algo, int64_t now_ns) {
  if (!capacity_) return 0;
  const uint64_t id = next_.load(kRelaxed);  // records are made one at a time: no fetch-and-add
  next_.store(id + 1, kRelaxed);
  Slot& s = slots_[(id - 1) & mask_];
  if (s.InFlight()) {  // held by one queued or started
    dropped_.store(dropped_.load(kRelaxed) + 1, kRelaxed);
    return 0;
  }
  while (s.version.load(std::memory_order_acquire) & 1) std::this_thread::yield();  // its last writer finishing
  const int64_t now = std::max<int64_t>(0, now_ns - begin_ns_);
  s.Begin();
  s.id.store(id, kRelaxed);
  s.seq.store(seq, kRelaxed);
  s.kind.store(static_cast<uint8_t>(c.kind), kRelaxed);
  s.p2p.store(c.send ? 1 : c.recv ? 2 : 0, kRelaxed);
  s.dtype.store(static_cast<uint8_t>(c.dtype), kRelaxed);
  s.count.store(c.count, kRelaxed);
  s.root.store(c.root, kRelaxed);
  s.peer.store(c.peer, kRelaxed);
  s.tag.store(c.tag, kRelaxed);
  s.mem.store(static_cast<uint8_t>(c.mem), kRelaxed);
  s.stream.store(c.stream ? 1 : 0, kRelaxed);
  s.algo.store(started && !c.send && !c.recv ? static_cast<uint8_t>(algo) : kNoAlgo, kRelaxed);
  s.state.store(static_cast<uint8_t>(started ? TraceState::kStarted : TraceState::kQueued), kRelaxed);
  s.queued_ns.store(now, kRelaxed);
  s.started_ns.store(started ? now : -1, kRelaxed);
  s.ended_ns.store(-1, kRelaxed);
  s.step.store(0, kRelaxed);
  s.chunk.store(0, kRelaxed);
  s.error_len.store(0, kRelaxed);
  s.waits.store(0, kRelaxed);
  s.name_len.store(0, kRelaxed);
  s.End();
  return id;
}

uint64_t FlightRecorder::Queued(const TraceCall& call) {
  return capacity_ ? Claim(call, false, -1, Algo::kAuto, Now()) : 0;
}

uint64_t FlightRecorder::Begun(const TraceCall& call, int64_t seq, Algo algo) {
  return capacity_ ? Claim(call, true, seq, algo, Now()) : 0;
}

uint64_t FlightRecorder::Begun(const TraceCall& call, int64_t seq, Algo algo,
                               std::chrono::steady_clock::time_point at) {
  return capacity_ ? Claim(call, true, seq, algo,
                           std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count())
                   : 0;
}

void FlightRecorder::Started(uint64_t id, int64_t seq, Algo algo) {
  Slot* s = Owned(id);
  if (!s) return;
  const int64_t now = Now() - begin_ns_;
  s->Begin();
  s->seq.store(seq, kRelaxed);
  s->algo.store(s->p2p.load(kRelaxed) ? kNoAlgo : static_cast<uint8_t>(algo), kRelaxed);
  s->state.store(static_cast<uint8_t>(TraceState::kStarted), kRelaxed);
  s->started_ns.store(now, kRelaxed);
  s->End();
}

void FlightRecorder::Chose(uint64_t id, Algo algo) {
  Slot* s = Owned(id);
  if (!s || s->algo.load(kRelaxed) == static_cast<uint8_t>(algo)) return;
  s->Begin();
  s->algo.store(static_cast<uint8_t>(algo), kRelaxed);
  s->End();
}

void FlightRecorder::Name(uint64_t id, std::string_view name) {
  Slot* s = Owned(id);
  if (!s || name.empty()) return;
  Names* names = names_.load(std::memory_order_acquire);
  if (!names) {  // made by the recorder's one writer at a time: no race to make it
    names = new Names[capacity_];
    names_.store(names, std::memory_order_release);
  }
  Names& n = names[(id - 1) & mask_];
  const size_t len = std::min(name.size(), kNameChars);
  s->Begin();
  for (size_t i = 0; i < len; ++i) n.text[i].store(name[i], kRelaxed);
  s->name_len.store(static_cast<uint8_t>(len), kRelaxed);
  s->End();
}

// Step and Done write single fields, each a fact of its own, outside the version's steps: a
// reader may see one newer than the rest, never a torn field.
void FlightRecorder::Step(uint64_t id, uint32_t step, uint32_t chunk, Algo algo) {
  Slot* s = Owned(id);
  if (!s) return;
  s->step.store(step, kRelaxed);
  s->chunk.store(chunk, kRelaxed);
  if (algo != Algo::kAuto) s->algo.store(static_cast<uint8_t>(algo), kRelaxed);
}

void FlightRecorder::Done(uint64_t id, Algo algo) {
  Slot* s = Owned(id);
  if (!s) return;
  if (algo != Algo::kAuto) s->algo.store(static_cast<uint8_t>(algo), kRelaxed);
  // With release: a claimer that reads it done sees the rest (InFlight).
  s->state.store(static_cast<uint8_t>(TraceState::kDone), std::memory_order_release);
}

void FlightRecorder::Ended(uint64_t id, const Status& result, const std::vector<int>& waiting_for) {
  if (result.ok()) return Done(id);
  Slot* s = Owned(id);
  if (!s) return;
  s->Begin();
  const int64_t now = Now() - begin_ns_;
  if (s->started_ns.load(kRelaxed) < 0) s->started_ns.store(now, kRelaxed);
  s->ended_ns.store(now, kRelaxed);
  const std::string& m = result.message();
  Cold& cold = *ColdFor(id);
  const size_t n = std::min(m.size(), kErrorChars);
  for (size_t i = 0; i < n; ++i) cold.error[i].store(m[i], kRelaxed);
  s->error_len.store(static_cast<uint16_t>(n), kRelaxed);
  const size_t w = std::min(waiting_for.size(), kWaitPeers);
  for (size_t i = 0; i < w; ++i) cold.wait[i].store(waiting_for[i], kRelaxed);
  s->waits.store(static_cast<uint8_t>(w), kRelaxed);
  s->state.store(static_cast<uint8_t>(TraceState::kFailed), std::memory_order_release);
  s->End();
  if (result.code() != Code::kInvalidArgument && result.code() != Code::kRevoked) failed_.store(true, kRelaxed);
}

bool FlightRecorder::Read(size_t index, TraceRecord* r) const {
  const Slot& s = slots_[index];
  const uint64_t v = s.version.load(std::memory_order_acquire);
  if (v & 1) return false;
  // After the version: a failure's writer made it before writing the slot.
  const Cold* base = cold_.load(std::memory_order_acquire);
  const Cold* cold = base ? &base[index] : nullptr;
  r->id = s.id.load(kRelaxed);
  r->seq = s.seq.load(kRelaxed);
  const uint8_t p2p = s.p2p.load(kRelaxed);
  r->call.kind = static_cast<CollKind>(s.kind.load(kRelaxed));
  r->call.send = p2p == 1;
  r->call.recv = p2p == 2;
  r->call.dtype = static_cast<DType>(s.dtype.load(kRelaxed));
  r->call.count = s.count.load(kRelaxed);
  r->call.root = s.root.load(kRelaxed);
  r->call.peer = s.peer.load(kRelaxed);
  r->call.tag = s.tag.load(kRelaxed);
  r->call.mem = static_cast<MemKind>(s.mem.load(kRelaxed));
  r->call.stream = s.stream.load(kRelaxed) != 0;
  const uint8_t algo = s.algo.load(kRelaxed);
  r->algo = algo == kNoAlgo ? "" : AlgoName(static_cast<Algo>(algo));
  r->state = static_cast<TraceState>(s.state.load(kRelaxed));
  r->step = s.step.load(kRelaxed);
  r->chunk = s.chunk.load(kRelaxed);
  r->queued_s = static_cast<double>(s.queued_ns.load(kRelaxed)) * 1e-9;
  const int64_t st = s.started_ns.load(kRelaxed), en = s.ended_ns.load(kRelaxed);
  r->started_s = st < 0 ? -1 : static_cast<double>(st) * 1e-9;
  r->ended_s = en < 0 ? -1 : static_cast<double>(en) * 1e-9;
  const size_t n = cold ? std::min<size_t>(s.error_len.load(kRelaxed), kErrorChars) : 0;
  r->error.resize(n);
  for (size_t i = 0; i < n; ++i) r->error[i] = cold->error[i].load(kRelaxed);
  const size_t w = cold ? std::min<size_t>(s.waits.load(kRelaxed), kWaitPeers) : 0;
  r->waiting_for.resize(w);
  for (size_t i = 0; i < w; ++i) r->waiting_for[i] = cold->wait[i].load(kRelaxed);
  const Names* names = names_.load(std::memory_order_acquire);
  const size_t nl = names ? std::min<size_t>(s.name_len.load(kRelaxed), kNameChars) : 0;
  r->name.resize(nl);
  for (size_t i = 0; i < nl; ++i) r->name[i] = names[index].text[i].load(kRelaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  return s.version.load(kRelaxed) == v;
}

std::vector<TraceRecord> FlightRecorder::Snapshot() const {
  std::vector<TraceRecord> out;
  for (size_t i = 0; i < capacity_; ++i) {  // every slot: one in flight may be older than the last N
    TraceRecord r;
    bool read = false;
    for (int attempt = 0; attempt < 64 && !read; ++attempt) {
      read = Read(i, &r);
      if (!read) std::this_thread::yield();
    }
    if (!read) {
      r = TraceRecord{};
      r.id = slots_[i].id.load(kRelaxed);
      r.busy = true;
    }
    if (r.id != 0) out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), [](const TraceRecord& a, const TraceRecord& b) { return a.id < b.id; });
  return out;
}

namespace {
// A call's own fields, as an op entry and a queued entry write them.
void CallJson(std::ostringstream& j, const TraceCall& c) {
  const char* what = c.send ? "send" : c.recv ? "recv" : CollKindName(c.kind);
  j << "\"op\": \"" << what << "\", \"dtype\": \"" << DTypeName(c.dtype) << "\", \"count\": " << c.count
    << ", \"root\": " << c.root << ", \"peer\": " << c.peer << ", \"tag\": " << c.tag << ", \"memory\": \""
    << MemKindName(c.mem) << "\", \"stream\": " << (c.stream ? "true" : "false");
}
}  // namespace

double FlightRecorder::Seconds() const { return static_cast<double>(Now() - begin_ns_) / 1e9; }

std::string TraceJson(const TraceOwner& o, const FlightRecorder& rec, size_t last) {
  std::ostringstream j;
  j.precision(6);
  j << std::fixed;
  j << "{\"hoop_trace\": 1, \"comm\": " << JsonQuoted(o.comm) << ", \"rank\": " << o.rank << ", \"size\": " << o.size
    << ", \"job_rank\": " << o.job_rank << ", \"pid\": " << o.pid << ", \"host\": " << JsonQuoted(o.host)
    << ", \"reason\": " << JsonQuoted(o.reason) << ", \"label\": " << JsonQuoted(o.label)
    << ", \"capacity\": " << rec.capacity() << ", \"recorded\": " << rec.recorded()
    << ", \"dropped\": " << rec.dropped() << ", \"now_s\": " << rec.Seconds();
  if (!o.retransmits.empty()) {
    j << ", \"retransmits\": [";
    for (size_t i = 0; i < o.retransmits.size(); ++i) j << (i ? ", " : "") << o.retransmits[i];
    j << "]";
  }
  j << ", \"ops\": [";
  bool first = true;
  const std::vector<TraceRecord> ops = rec.Snapshot();
  const uint64_t newest = ops.empty() ? 0 : ops.back().id;
  for (const TraceRecord& r : ops) {
    const bool flying = r.busy || r.state == TraceState::kQueued || r.state == TraceState::kStarted;
    if (!flying && last < newest && r.id <= newest - last) continue;
    j << (first ? "\n  " : ",\n  ") << "{\"id\": " << r.id;
    first = false;
    if (r.busy) {
      j << ", \"busy\": true}";
      continue;
    }
    j << ", \"seq\": " << r.seq << ", ";
    CallJson(j, r.call);
    if (!r.name.empty()) j << ", \"name\": " << JsonQuoted(r.name);
    j << ", \"algo\": \"" << r.algo << "\", \"state\": \"" << TraceStateName(r.state) << "\", \"step\": " << r.step
      << ", \"chunk\": " << r.chunk << ", \"queued_s\": " << r.queued_s << ", \"started_s\": " << r.started_s
      << ", \"ended_s\": " << r.ended_s;
    if (!r.error.empty()) j << ", \"error\": " << JsonQuoted(r.error);
    if (!r.waiting_for.empty()) {
      j << ", \"waiting_for\": [";
      for (size_t i = 0; i < r.waiting_for.size(); ++i) j << (i ? ", " : "") << r.waiting_for[i];
      j << "]";
    }
    j << "}";
  }
  j << "\n], \"queued\": ";
  if (!o.queue_listed) {
    j << "null}\n";
    return j.str();
  }
  j << "[";
  for (size_t i = 0; i < o.queued.size(); ++i) {
    j << (i ? ",\n  {" : "\n  {");
    CallJson(j, o.queued[i]);
    j << "}";
  }
  j << (o.queued.empty() ? "]}\n" : "\n]}\n");
  return j.str();
}

StatusOr<std::string> WriteTrace(const std::string& dir, const TraceOwner& owner, const FlightRecorder& recorder) {
  std::string name = owner.comm;
  for (char& c : name)
    if (c == '/' || c == ' ') c = '_';
  const std::string path = dir + "/hoop-trace." + name + "." + std::to_string(owner.rank) + ".json";
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const std::string text = TraceJson(owner, recorder);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(Code::kInvalidArgument, "flight recorder: cannot create " + tmp, errno);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return ErrnoStatus(Code::kInternal, "flight recorder: writing " + tmp, err);
    }
    done += static_cast<size_t>(w);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return ErrnoStatus(Code::kInternal, "flight recorder: renaming " + tmp + " to " + path, err);
  }
  return path;
}

}  // namespace hoop
