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

void FlightRecorder::AwaitWriter(const Slot& s) {
  while (s.version.load(std::memory_order_acquire) & 1) std::this_thread::yield();
}

uint64_t FlightRecorder::Queued(const TraceCall& call) {
  return capacity_ ? Claim(call, false, -1, Algo::kAuto, Now()) : 0;
}

uint64_t FlightRecorder::Begun(const TraceCall& call, int64_t seq, Algo algo) {
  return capacity_ ? Claim(call, true, seq, algo, Now()) : 0;
}

void FlightRecorder::Started(uint64_t id, int64_t seq, Algo algo) {
  Slot* s = Owned(id);
  if (!s) return;
  const int64_t now = Now() - begin_ns_;
  s->Begin();
  s->seq.store(seq, kRelaxed);
  s->algo.store(s->p2p() ? kNoAlgo : static_cast<uint8_t>(algo), kRelaxed);
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
  s->where.store(uint64_t{step} | uint64_t{chunk} << 32, kRelaxed);
  if (algo != Algo::kAuto) s->algo.store(static_cast<uint8_t>(algo), kRelaxed);
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
  if (OwesDump(result)) failed_.store(true, kRelaxed);
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
  const uint64_t what = s.what.load(kRelaxed), who = s.who.load(kRelaxed), where = s.where.load(kRelaxed);
  r->call.kind = static_cast<CollKind>(what & 0xff);
  r->call.send = (what >> 8 & 0xff) == 1;
  r->call.recv = (what >> 8 & 0xff) == 2;
  r->call.dtype = static_cast<DType>(what >> 16 & 0xff);
  r->call.mem = static_cast<MemKind>(what >> 24 & 0xff);
  r->call.stream = (what >> 32 & 0xff) != 0;
  r->call.count = s.count.load(kRelaxed);
  r->call.root = static_cast<int32_t>(static_cast<uint32_t>(who));
  r->call.peer = static_cast<int32_t>(static_cast<uint32_t>(who >> 32));
  r->call.tag = s.tag.load(kRelaxed);
  const uint8_t algo = s.algo.load(kRelaxed);
  r->algo = algo == kNoAlgo ? "" : AlgoName(static_cast<Algo>(algo));
  r->state = static_cast<TraceState>(s.state.load(kRelaxed));
  r->step = static_cast<uint32_t>(where);
  r->chunk = static_cast<uint32_t>(where >> 32);
  r->queued_s = static_cast<double>(s.queued_ns.load(kRelaxed)) * 1e-9;
  // Only a failed one's end, message and peers were written for this operation (Fill).
  const bool failed = r->state == TraceState::kFailed;
  const int64_t st = s.started_ns.load(kRelaxed), en = failed ? s.ended_ns.load(kRelaxed) : -1;
  r->started_s = st < 0 ? -1 : static_cast<double>(st) * 1e-9;
  r->ended_s = en < 0 ? -1 : static_cast<double>(en) * 1e-9;
  const size_t n = cold && failed ? std::min<size_t>(s.error_len.load(kRelaxed), kErrorChars) : 0;
  r->error.resize(n);
  for (size_t i = 0; i < n; ++i) r->error[i] = cold->error[i].load(kRelaxed);
  const size_t w = cold && failed ? std::min<size_t>(s.waits.load(kRelaxed), kWaitPeers) : 0;
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
