// Pipelined staging (collectives/device/pipelined_staging.h) without a device: the executor over real
// tcp and shm back ends, ranks as threads, with a fake StageCopies whose "device" is host memory.
// The fake hands the input over only when the executor asks for it (WaitIn) and the host copy
// starts as poison, so a read before the ask shows in the result; it copies output back the
// moment it is told a part is final, so a part told too early shows too. Every staged run must
// give the same bits as the same plan run on the plain buffers, in every placement: device
// input and output, in place (two host copies, or one run in place, where a copy in landing
// after a receive wrote there would show), and one side on the host; with one copy per range
// and with neighbouring ranges joined into larger copies; with every copy in queued at the
// start, and queued only as far ahead of the run's asks as a few bytes, or none (a mark the run
// asks for before it was queued fails the fake's WaitIn).
#include <catch2/catch.hpp>

#include <cstring>
#include <optional>
#include <thread>

#include "collectives/core/executor.h"
#include "collectives/device/pipelined_staging.h"
#include "collectives/testing/reference.h"
#include "transport/select.h"
#include "transport/store/memory_store.h"

using namespace hoop;

namespace {

class FakeCopies final : public StageCopies {
 public:
  Status Prepare(void*) override {
    ins_.clear();
    marks_.clear();
    done_ = 0;
    in_bytes_ = 0;
    asked_.clear();
    queued_at_first_ask_ = 0;
    queued_at_first_out_.reset();
    out_bytes_ = 0;
    return Status::Ok();
  }
  Status Place(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);  // before any copy in is queued: in order
    return Status::Ok();
  }
  Status QueueIn(void* host, const void* device, size_t bytes, bool mark) override {
    ins_.push_back({static_cast<char*>(host), static_cast<const char*>(device), bytes});
    in_bytes_ += bytes;
    if (mark) marks_.push_back(ins_.size());
    return Status::Ok();
  }
  Status WaitIn(uint32_t k, Deadline) override {
    if (k > marks_.size())
      return Internal("asked for mark " + std::to_string(k) + " of " + std::to_string(marks_.size()));
    if (asked_.empty()) queued_at_first_ask_ = marks_.size();
    asked_.push_back(k);
    if (k > 0) Flush(marks_[k - 1]);
    return Status::Ok();
  }
  Status QueueOut(void* device, const void* host, size_t bytes) override {
    Flush(ins_.size());  // the contract: copies back start after every copy in
    if (!queued_at_first_out_) queued_at_first_out_ = marks_.size();
    std::memcpy(device, host, bytes);
    out_bytes_ += bytes;
    return Status::Ok();
  }
  Status Finish() override {
    Flush(ins_.size());
    return Status::Ok();
  }
  const std::vector<uint32_t>& asked() const { return asked_; }
  size_t queued() const { return marks_.size(); }
  size_t queued_at_first_ask() const { return queued_at_first_ask_; }
  std::optional<size_t> queued_at_first_out() const { return queued_at_first_out_; }
  size_t in_bytes() const { return in_bytes_; }
  size_t out_bytes() const { return out_bytes_; }

 private:
  struct Copy {
    char* dst;
    const char* src;
    size_t bytes;
  };
  void Flush(size_t k) {
    for (; done_ < k; ++done_)
      if (ins_[done_].bytes > 0) std::memcpy(ins_[done_].dst, ins_[done_].src, ins_[done_].bytes);
  }
  std::vector<Copy> ins_;
  std::vector<size_t> marks_;  // mark k: after the first marks_[k] copies
  size_t done_ = 0;
  std::vector<uint32_t> asked_;
  size_t queued_at_first_ask_ = 0;
  std::optional<size_t> queued_at_first_out_;  // marks queued when the first copy back was
  size_t out_bytes_ = 0;
  size_t in_bytes_ = 0;
};

enum class Place { kDevice, kInPlace, kInPlaceHost, kDeviceIn, kDeviceOut };
const char* PlaceName(Place p) {
  switch (p) {
    case Place::kDevice: return "device in and out";
    case Place::kInPlace: return "in place on the device";
    case Place::kInPlaceHost: return "in place on the device and on the host";
    case Place::kDeviceIn: return "device in, host out";
    case Place::kDeviceOut: return "host in, device out";
  }
  return "?";
}

struct Case {
  CollKind kind;
  Algo algo;
  size_t count;
  DType dtype;
  ReduceOp op;
  Compression wire;
  Place place;
  size_t stage = 0;                              // PipelinedStaging's stage_bytes
  size_t ahead = PipelinedStaging::kAheadBytes;  // and its ahead_bytes
  std::string Name() const {
    return std::string(AlgoName(algo)) + " " + std::to_string(count) + " x " + DTypeName(dtype) + " " +
           ReduceOpName(op) + (wire != Compression::kNone ? std::string(" ") + CompressionName(wire) : "") + ", " +
           PlaceName(place) + ", copies of up to " + std::to_string(stage) + " B queued " + std::to_string(ahead) +
           " B ahead";
  }
};

constexpr size_t kChunkElems = 61;  // odd, so chunks straddle segments

// One rank's part: the plan on plain buffers, then staged; the two outputs must match.
struct Rank {
  int rank = 0, size = 0;
  std::unique_ptr<Transport> t;
  StagingPool pool;
  ExecState state;
  uint32_t seq = 0;
  std::vector<int> hosts;

  Status Exec(const Plan& plan, const Case& c, void* in, void* out, ExecMemory* memory) {
    const size_t bytes = c.count * DTypeSize(c.dtype);
    return Exec(plan, c, in, bytes, out, bytes, memory);
  }
  Status Exec(const Plan& plan, const Case& c, void* in, size_t in_bytes, void* out, size_t out_bytes,
              ExecMemory* memory) {
    ExecArgs a;
    a.plan = &plan;
    HOOP_ASSIGN_OR_RETURN(a.in, t->Register(in, in_bytes, MemKind::kHost));
    HOOP_ASSIGN_OR_RETURN(a.out, t->Register(out, out_bytes, MemKind::kHost));
    a.dtype = c.dtype;
    a.op = c.op;
    a.nranks = size;
    a.seq = ++seq;
    a.check = 7;
    a.chunk_bytes = kChunkElems * DTypeSize(c.dtype);
    a.window = 3;
    a.compression = c.wire;
    a.deadline = Deadline::After(std::chrono::seconds(20));
    a.timeout_s = 20;
    const std::string name = c.Name();
    a.what = [name, this] { return "rank " + std::to_string(rank) + ": " + name; };
    a.memory = memory;
    return Execute(*t, pool, state, a);
  }

  Status Run(const Case& c) {
    const size_t bytes = c.count * DTypeSize(c.dtype);
    const size_t chunk = kChunkElems;
    const PlanKey key{CollKind::kAllreduce, c.algo, -1, c.count, chunk};
    const Plan plan = MakePlan(BuildSchedule(key, rank, size, &hosts), chunk);
    std::vector<char> input(bytes), plain(bytes);
    if (c.wire != Compression::kNone)
      FillMixed(c.dtype, input.data(), c.count, 77 + static_cast<uint64_t>(rank));
    else
      FillInput(c.dtype, c.op, input.data(), c.count, 77 + static_cast<uint64_t>(rank));
    HOOP_RETURN_IF_ERROR(Exec(plan, c, input.data(), plain.data(), nullptr));

    // The "device" buffers, and the host copies the executor runs on (poison until handed over).
    std::vector<char> dev_in = input, dev_out(bytes, 0x11), host_in(bytes, 0x7f), host_out(bytes, 0x7f);
    const bool in_dev = c.place != Place::kDeviceOut, out_dev = c.place != Place::kDeviceIn;
    char* d_in = dev_in.data();
    const bool one_copy = c.place == Place::kInPlaceHost;
    char* d_out = c.place == Place::kInPlace || one_copy ? dev_in.data() : dev_out.data();
    char* h_in = one_copy ? host_out.data() : host_in.data();
    std::vector<char> host_side_in = input, host_side_out(bytes, 0x11);
    FakeCopies copies;
    HOOP_RETURN_IF_ERROR(copies.Prepare(nullptr));
    PipelinedStaging memory(copies, in_dev ? d_in : nullptr, in_dev ? h_in : nullptr, out_dev ? d_out : nullptr,
                            out_dev ? host_out.data() : nullptr, Deadline::After(std::chrono::seconds(20)), c.stage,
                            c.ahead);
    char* run_in = in_dev ? h_in : host_side_in.data();
    char* run_out = out_dev ? host_out.data() : host_side_out.data();
    Status s = Exec(plan, c, run_in, run_out, &memory);
    if (s.ok()) s = memory.Flush();
    HOOP_RETURN_IF_ERROR(copies.Finish());
    HOOP_RETURN_IF_ERROR(s);
    const std::string where = "rank " + std::to_string(rank) + ": " + c.Name();
    const char* got = out_dev ? d_out : host_side_out.data();
    if (std::memcmp(got, plain.data(), bytes) != 0)
      return Internal(where + ": the staged output differs from the plain run's");
    if (out_dev && std::memcmp(d_out, host_out.data(), bytes) != 0)
      return Internal(where + ": a part handed back as final changed afterwards");
    if (out_dev && copies.out_bytes() != bytes)
      return Internal(where + ": " + std::to_string(copies.out_bytes()) + " bytes handed back, not " +
                      std::to_string(bytes));
    if (!out_dev && copies.out_bytes() != 0) return Internal(where + ": output handed back from host memory");
    if (!in_dev && copies.in_bytes() != 0) return Internal(where + ": host input copied in");
    // Joined where a copy may hold the whole buffer: batches doubling from one range, so a few
    // marks for dozens of ranges; and copies back in sixteenths of the output, so fewer than
    // the ranges where there are many.
    const StageMap& m = memory.map();
    if (c.stage >= bytes && in_dev && m.in.size() > 16 && memory.marks() * 4 > m.in.size())
      return Internal(where + ": " + std::to_string(memory.marks()) + " marks for " + std::to_string(m.in.size()) +
                      " ranges");
    if (c.stage >= bytes && out_dev && m.final.size() > 64 && memory.copies_out() * 2 > m.final.size())
      return Internal(where + ": " + std::to_string(memory.copies_out()) + " copies back of " +
                      std::to_string(m.final.size()) + " ranges");
    // The input moved piece by piece: the first ask was for part of it, where there are parts.
    if (in_dev && copies.queued() > 2 && (copies.asked().empty() || copies.asked().front() >= copies.queued()))
      return Internal(where + ": the first ask was for all " + std::to_string(copies.queued()) + " copies in");
    // Queued no further ahead than asked: with no bytes ahead, one batch before the first ask.
    if (in_dev && c.ahead == 0 && !copies.asked().empty() && copies.queued_at_first_ask() > 1)
      return Internal(where + ": " + std::to_string(copies.queued_at_first_ask()) +
                      " marks queued before the first ask");
    if (in_dev && copies.queued_at_first_out() && *copies.queued_at_first_out() != memory.marks())
      return Internal(where + ": " + std::to_string(*copies.queued_at_first_out()) + " of " +
                      std::to_string(memory.marks()) + " marks queued when the first copy back was");
    return Status::Ok();
  }

  // Broadcast (root: the last rank), allgather and reduce-scatter with device input and output,
  // staged as RunPipelined does: the caller's placement in the output made on the "device"
  // (Place), a reduce-scatter's output a host working buffer.
  Status RunOther(CollKind kind, const Case& c) {
    const size_t es = DTypeSize(c.dtype), n = static_cast<size_t>(size), count = c.count;
    const bool rs = kind == CollKind::kReduceScatter, ag = kind == CollKind::kAllgather;
    const bool root = kind == CollKind::kBroadcast && rank == size - 1;
    const size_t in_bytes = (rs ? n * count : count) * es;
    const size_t out_bytes = (kind == CollKind::kBroadcast ? count : n * count) * es;
    const size_t own = static_cast<size_t>(rank) * count * es;
    const PlanKey key{kind, c.algo, kind == CollKind::kBroadcast ? size - 1 : -1, count, kChunkElems};
    const Plan plan = MakePlan(BuildSchedule(key, rank, size, &hosts), kChunkElems);
    std::vector<char> input(in_bytes + 1), plain(out_bytes + 1, 0x11);
    FillInput(c.dtype, c.op, input.data(), in_bytes / es, 99 + static_cast<uint64_t>(rank));
    // The plain run, with the callers' placements (RunBroadcast's, RunAllgather's).
    if (root) std::memcpy(plain.data(), input.data(), out_bytes);
    if (ag) std::memcpy(plain.data() + own, input.data(), count * es);
    char* plain_in = kind == CollKind::kBroadcast && !root ? plain.data() : input.data();
    HOOP_RETURN_IF_ERROR(Exec(plan, c, plain_in, in_bytes, plain.data(), out_bytes, nullptr));

    std::vector<char> dev_in = input, dev_out(out_bytes + 1, 0x11), host_in(in_bytes + 1, 0x7f),
                      host_out(out_bytes + 1, 0x7f);
    const bool in_dev = kind != CollKind::kBroadcast || root;
    FakeCopies copies;
    HOOP_RETURN_IF_ERROR(copies.Prepare(nullptr));
    if (root) HOOP_RETURN_IF_ERROR(copies.Place(dev_out.data(), dev_in.data(), out_bytes));
    if (ag) HOOP_RETURN_IF_ERROR(copies.Place(dev_out.data() + own, dev_in.data(), count * es));
    PipelinedStaging memory(copies, in_dev ? dev_in.data() : nullptr, in_dev ? host_in.data() : nullptr,
                            rs ? nullptr : dev_out.data(), rs ? nullptr : host_out.data(),
                            Deadline::After(std::chrono::seconds(20)), c.stage, c.ahead);
    Status s = Exec(plan, c, in_dev ? host_in.data() : host_out.data(), in_bytes, host_out.data(), out_bytes, &memory);
    if (s.ok()) s = memory.Flush();
    HOOP_RETURN_IF_ERROR(copies.Finish());
    HOOP_RETURN_IF_ERROR(s);
    const std::string where = "rank " + std::to_string(rank) + ": " + CollKindName(kind) + " " + c.Name();
    // What the output must hold: all of it; a reduce-scatter's result is its own block of the
    // working buffer (the communicator copies that to the device).
    const char* got = rs ? host_out.data() + own : dev_out.data();
    const char* want = rs ? plain.data() + own : plain.data();
    if (std::memcmp(got, want, rs ? count * es : out_bytes) != 0)
      return Internal(where + ": the staged output differs from the plain run's");
    return Status::Ok();
  }
};

// Connects `n` ranks as threads over `transport` and runs every case on each.
Status RunAll(const std::string& transport, int n, const std::vector<Case>& cases) {
  MemoryStore store;
  std::vector<Rank> ranks(static_cast<size_t>(n));
  std::vector<Status> result(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      Rank& me = ranks[static_cast<size_t>(r)];
      me.rank = r;
      me.size = n;
      for (int h = 0; h < n; ++h) me.hosts.push_back(n % 2 == 0 ? h / 2 : h);
      std::vector<PeerInfo> peers;
      for (int p = 0; p < n; ++p) peers.push_back({p, "stagehost"});
      TransportOptions o{r, n, "127.0.0.1", "", "stage", peers, {}, {}, "HOOP_TIMEOUT"};
      auto t = ConnectPeers(store, "stage/", o, transport, Deadline::After(std::chrono::seconds(20)));
      if (!t.ok()) {
        result[static_cast<size_t>(r)] = t.status();
        return;
      }
      me.t = std::move(t).value();
      for (const Case& c : cases) {
        Status s = c.kind == CollKind::kAllreduce ? me.Run(c) : me.RunOther(c.kind, c);
        if (!s.ok()) {
          result[static_cast<size_t>(r)] = s;
          me.t->Abort(s.message());  // the others' next waits fail at once
          return;
        }
      }
    });
  for (auto& t : threads) t.join();
  for (const Status& s : result)
    if (!s.ok()) return s;
  return Status::Ok();
}

}  // namespace

TEST_CASE("pipelined staging: hands input over piece by piece and output back as it is final", "[stage]") {
  std::vector<Case> cases;
  for (Algo algo : {Algo::kRing, Algo::kTree, Algo::kDoubling, Algo::kHierarchical})
    for (Place place : {Place::kDevice, Place::kInPlace, Place::kInPlaceHost, Place::kDeviceIn, Place::kDeviceOut})
      for (size_t count : {size_t{1}, size_t{7}, size_t{2001}}) {
        // One copy per range, queued only when asked for; ranges joined up to a few chunks,
        // queued a little ahead; all but the first joined, all queued at the start.
        cases.push_back(
            {CollKind::kAllreduce, algo, count, DType::kF32, ReduceOp::kSum, Compression::kNone, place, 0, 0});
        cases.push_back(
            {CollKind::kAllreduce, algo, count, DType::kI64, ReduceOp::kMax, Compression::kNone, place, 1000, 1500});
        cases.push_back(
            {CollKind::kAllreduce, algo, count, DType::kBF16, ReduceOp::kAvg, Compression::kNone, place, 1 << 20});
      }
  // Enough ranges that the output's sixteenths hold several each.
  for (Algo algo : {Algo::kRing, Algo::kTree, Algo::kDoubling, Algo::kHierarchical})
    for (Place place : {Place::kDevice, Place::kInPlaceHost})
      for (size_t ahead : {size_t{0}, PipelinedStaging::kAheadBytes})
        cases.push_back({CollKind::kAllreduce, algo, 20001, DType::kBF16, ReduceOp::kSum, Compression::kNone, place,
                         1 << 20, ahead});
  // Compression reads the input when it encodes (the ring only).
  for (Place place : {Place::kDevice, Place::kInPlace, Place::kInPlaceHost})
    cases.push_back(
        {CollKind::kAllreduce, Algo::kRing, 3001, DType::kF32, ReduceOp::kSum, Compression::kFp16, place, 1000, 0});
  // The other collectives staged piece by piece, every algorithm each has.
  for (CollKind kind : {CollKind::kBroadcast, CollKind::kAllgather, CollKind::kReduceScatter})
    for (int a = 1; a <= static_cast<int>(Algo::kHierarchical); ++a)
      if (FindAlgo(kind, static_cast<Algo>(a)))
        for (size_t count : {size_t{1}, size_t{7}, size_t{2001}})
          cases.push_back({kind, static_cast<Algo>(a), count, DType::kI32, ReduceOp::kSum, Compression::kNone,
                           Place::kDevice, count > 7 ? size_t{1000} : 0,
                           count > 7 ? size_t{0} : PipelinedStaging::kAheadBytes});
  for (const char* transport : {"tcp", "shm"})
    for (int n : {2, 3, 4}) {
      Status s = RunAll(transport, n, cases);
      INFO(transport << ", " << n << " ranks: " << s.message());
      CHECK(s.ok());
    }
}

namespace {
// Registers nothing: enough for the staging pool, which only asks for regions.
class NoTransport final : public Transport {
 public:
  std::string Name() const override { return "none"; }
  bool CanConnect(const PeerInfo&, const PeerInfo&) const override { return false; }
  std::string Address() const override { return ""; }
  Status Connect(int, const std::string&, Deadline) override { return Unimplemented("none"); }
  StatusOr<Region> Register(void* p, size_t bytes, MemKind kind) override { return Region{p, bytes, kind}; }
  Endpoint* endpoint(int) override { return nullptr; }
  Status Poll(std::vector<Completion>*, Deadline, SpinGate) override { return Unimplemented("none"); }
  void Abort(const std::string&) override {}
};
}  // namespace

TEST_CASE("staging pool: chunks added for a smaller call keep the largest size", "[stage]") {
  // Found by the test above: the hierarchical schedule's wider window after a call with larger
  // elements added short chunks that the next large call overran.
  NoTransport t;
  StagingPool pool;
  REQUIRE(pool.Reserve(t, 2, 488).ok());
  REQUIRE(pool.Reserve(t, 6, 244).ok());
  for (size_t i = 0; i < 6; ++i) CHECK(pool.region(i).bytes == 488);
  auto grown = pool.AcquireOrGrow(t);
  REQUIRE(grown.ok());
}
