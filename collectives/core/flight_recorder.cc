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

constexpr size_t kErrorChars = 240, kWaitPeers = 16;
constexpr auto kRelaxed = std::memory_order_relaxed;

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
struct alignas(64) FlightRecorder::Slot {
  std::atomic<uint64_t> version{0};
  std::atomic<uint64_t> id{0}, count{0};
  std::atomic<int64_t> seq{-1}, queued_ns{0}, started_ns{-1}, ended_ns{-1};
  std::atomic<const char*> algo{nullptr};
  std::atomic<int32_t> root{-1}, peer{-1}, tag{0};
  std::atomic<uint8_t> kind{0}, p2p{0}, dtype{0}, mem{0}, stream{0}, state{0}, waits{0};
  std::atomic<uint16_t> error_len{0};
  std::atomic_flag lock = ATOMIC_FLAG_INIT;  // held by a writer, Begin to End

  void Begin() {
    version.store(version.load(kRelaxed) + 1, kRelaxed);
    std::atomic_thread_fence(std::memory_order_release);
  }
  void End() {
    version.store(version.load(kRelaxed) + 1, std::memory_order_release);
    lock.clear(std::memory_order_release);
  }
};

struct FlightRecorder::Cold {
  std::atomic<char> error[kErrorChars];
  std::atomic<int32_t> wait[kWaitPeers];
};

FlightRecorder::FlightRecorder(size_t capacity)
    : capacity_(capacity),
      slots_(capacity ? new Slot[capacity] : nullptr),
      cold_(capacity ? new Cold[capacity] : nullptr),
      begin_ns_(Now()) {}

FlightRecorder::~FlightRecorder() = default;

FlightRecorder::Slot* FlightRecorder::Take(uint64_t id) {
  Slot& s = slots_[(id - 1) % capacity_];
  while (s.lock.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
  if (s.id.load(kRelaxed) != id) {  // a newer operation took the slot: this one's record is gone
    s.lock.clear(std::memory_order_release);
    return nullptr;
  }
  s.Begin();
  return &s;
}

uint64_t FlightRecorder::Queued(const TraceCall& c) {
  if (!capacity_) return 0;
  const uint64_t id = next_.fetch_add(1, kRelaxed);
  const int64_t now = Now() - begin_ns_;
  Slot& s = slots_[(id - 1) % capacity_];
  while (s.lock.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
  if (s.id.load(kRelaxed) > id) {  // a caller delayed past N newer ones: they keep the slot
    s.lock.clear(std::memory_order_release);
    return id;
  }
  s.Begin();
  s.id.store(id, kRelaxed);
  s.seq.store(-1, kRelaxed);
  s.kind.store(static_cast<uint8_t>(c.kind), kRelaxed);
  s.p2p.store(c.send ? 1 : c.recv ? 2 : 0, kRelaxed);
  s.dtype.store(static_cast<uint8_t>(c.dtype), kRelaxed);
  s.count.store(c.count, kRelaxed);
  s.root.store(c.root, kRelaxed);
  s.peer.store(c.peer, kRelaxed);
  s.tag.store(c.tag, kRelaxed);
  s.mem.store(static_cast<uint8_t>(c.mem), kRelaxed);
  s.stream.store(c.stream ? 1 : 0, kRelaxed);
  s.algo.store(nullptr, kRelaxed);
  s.state.store(static_cast<uint8_t>(TraceState::kQueued), kRelaxed);
  s.queued_ns.store(now, kRelaxed);
  s.started_ns.store(-1, kRelaxed);
  s.ended_ns.store(-1, kRelaxed);
  s.error_len.store(0, kRelaxed);
  s.waits.store(0, kRelaxed);
  s.End();
  return id;
}

void FlightRecorder::Started(uint64_t id, int64_t seq, Algo algo) {
  if (!capacity_ || id == 0) return;
  const int64_t now = Now() - begin_ns_;
  Slot* s = Take(id);
  if (!s) return;
  s->seq.store(seq, kRelaxed);
  s->algo.store(s->p2p.load(kRelaxed) ? nullptr : AlgoName(algo), kRelaxed);
  s->state.store(static_cast<uint8_t>(TraceState::kStarted), kRelaxed);
  s->started_ns.store(now, kRelaxed);
  s->End();
}

void FlightRecorder::Chose(uint64_t id, Algo algo) {
  if (!capacity_ || id == 0) return;
  Slot* s = Take(id);
  if (!s) return;
  s->algo.store(AlgoName(algo), kRelaxed);
  s->End();
}

void FlightRecorder::Ended(uint64_t id, const Status& result, const std::vector<int>& waiting_for) {
  if (!capacity_ || id == 0) return;
  const int64_t now = Now() - begin_ns_;
  Slot* s = Take(id);
  if (!s) return;
  s->state.store(static_cast<uint8_t>(result.ok() ? TraceState::kDone : TraceState::kFailed), kRelaxed);
  if (s->started_ns.load(kRelaxed) < 0) s->started_ns.store(now, kRelaxed);
  s->ended_ns.store(now, kRelaxed);
  if (!result.ok()) {
    const std::string& m = result.message();
    Cold& cold = cold_[(id - 1) % capacity_];
    const size_t n = std::min(m.size(), kErrorChars);
    for (size_t i = 0; i < n; ++i) cold.error[i].store(m[i], kRelaxed);
    s->error_len.store(static_cast<uint16_t>(n), kRelaxed);
    const size_t w = std::min(waiting_for.size(), kWaitPeers);
    for (size_t i = 0; i < w; ++i) cold.wait[i].store(waiting_for[i], kRelaxed);
    s->waits.store(static_cast<uint8_t>(w), kRelaxed);
  }
  s->End();
}

bool FlightRecorder::Read(const Slot& s, const Cold& cold, TraceRecord* r) const {
  const uint64_t v = s.version.load(std::memory_order_acquire);
  if (v & 1) return false;
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
  const char* algo = s.algo.load(kRelaxed);
  r->algo = algo ? algo : "";
  r->state = static_cast<TraceState>(s.state.load(kRelaxed));
  r->queued_s = static_cast<double>(s.queued_ns.load(kRelaxed)) * 1e-9;
  const int64_t st = s.started_ns.load(kRelaxed), en = s.ended_ns.load(kRelaxed);
  r->started_s = st < 0 ? -1 : static_cast<double>(st) * 1e-9;
  r->ended_s = en < 0 ? -1 : static_cast<double>(en) * 1e-9;
  const size_t n = std::min<size_t>(s.error_len.load(kRelaxed), kErrorChars);
  r->error.resize(n);
  for (size_t i = 0; i < n; ++i) r->error[i] = cold.error[i].load(kRelaxed);
  const size_t w = std::min<size_t>(s.waits.load(kRelaxed), kWaitPeers);
  r->waiting_for.resize(w);
  for (size_t i = 0; i < w; ++i) r->waiting_for[i] = cold.wait[i].load(kRelaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  return s.version.load(kRelaxed) == v;
}

std::vector<TraceRecord> FlightRecorder::Snapshot() const {
  std::vector<TraceRecord> out;
  if (!capacity_) return out;
  const uint64_t last = next_.load(std::memory_order_acquire) - 1;
  const uint64_t first = last > capacity_ ? last - capacity_ + 1 : 1;
  for (uint64_t id = first; id <= last; ++id) {
    const Slot& s = slots_[(id - 1) % capacity_];
    const Cold& cold = cold_[(id - 1) % capacity_];
    TraceRecord r;
    bool read = false;
    for (int attempt = 0; attempt < 64 && !read; ++attempt) {
      read = Read(s, cold, &r);
      if (!read) std::this_thread::yield();
    }
    if (read && r.id != id) continue;  // not yet written, or already a newer operation's
    if (!read) {
      r = TraceRecord{};
      r.id = id;
      r.busy = true;
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::string TraceJson(const TraceOwner& o, const FlightRecorder& rec) {
  std::ostringstream j;
  j.precision(6);
  j << std::fixed;
  j << "{\"hoop_trace\": 1, \"comm\": " << JsonQuoted(o.comm) << ", \"rank\": " << o.rank << ", \"size\": " << o.size
    << ", \"job_rank\": " << o.job_rank << ", \"pid\": " << o.pid << ", \"host\": " << JsonQuoted(o.host)
    << ", \"reason\": " << JsonQuoted(o.reason) << ", \"capacity\": " << rec.capacity()
    << ", \"recorded\": " << rec.recorded() << ", \"ops\": [";
  bool first = true;
  for (const TraceRecord& r : rec.Snapshot()) {
    j << (first ? "\n  " : ",\n  ") << "{\"id\": " << r.id;
    first = false;
    if (r.busy) {
      j << ", \"busy\": true}";
      continue;
    }
    const char* what = r.call.send ? "send" : r.call.recv ? "recv" : CollKindName(r.call.kind);
    j << ", \"seq\": " << r.seq << ", \"op\": \"" << what << "\", \"dtype\": \"" << DTypeName(r.call.dtype)
      << "\", \"count\": " << r.call.count << ", \"root\": " << r.call.root << ", \"peer\": " << r.call.peer
      << ", \"tag\": " << r.call.tag << ", \"algo\": \"" << r.algo << "\", \"memory\": \"" << MemKindName(r.call.mem)
      << "\", \"stream\": " << (r.call.stream ? "true" : "false") << ", \"state\": \"" << TraceStateName(r.state)
      << "\", \"queued_s\": " << r.queued_s << ", \"started_s\": " << r.started_s << ", \"ended_s\": " << r.ended_s;
    if (!r.error.empty()) j << ", \"error\": " << JsonQuoted(r.error);
    if (!r.waiting_for.empty()) {
      j << ", \"waiting_for\": [";
      for (size_t i = 0; i < r.waiting_for.size(); ++i) j << (i ? ", " : "") << r.waiting_for[i];
      j << "]";
    }
    j << "}";
  }
  j << "\n]}\n";
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
