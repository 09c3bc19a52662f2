// The Transport/Endpoint interface every back end implements (tcp/, shm/, ucx/, ofi/). A new
// back end writes eleven calls: Endpoint's peer, PostSend and PostRecv, and Transport's Name,
// CanConnect, Address, Connect, Register, endpoint, Poll and Abort. Everything else has a
// default that is right for it; the fast paths (EndpointFastPath: in-place receives, immediate
// copies, taking a message without a poll) are one optional interface, all or none.
//
// A Transport owns its connections to the other ranks of one communicator and makes
// progress inside Poll() (shm also starts a one-slot send inside PostSend), always on the
// caller's thread: no hidden progress threads, no locks on the data path.
//
// Messages are tagged. A receive is matched by Tag::match; Tag::check is an opaque word that
// sender and receiver must agree on (the collectives put a description of the operation in it),
// and a disagreement completes the receive with FailedPrecondition and the peer's word, so the
// caller can say exactly how the ranks disagree. A message whose tag no receive is posted for
// yet is left in the socket (the peer is slowed by TCP, no buffer grows): memory stays bounded.
//
// Failure: a lost peer completes every pending operation on its endpoint with
// Unavailable("lost peer N ..."), and every later one too.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "common/dtype.h"
#include "common/status.h"
#include "transport/device_queue.h"

namespace hoop {

// Memory that operations refer to. Back ends that need registration (UCX, libfabric) keep their
// handle in `handle`.
struct Region {
  void* base = nullptr;
  size_t bytes = 0;
  MemKind kind = MemKind::kHost;
  uint64_t handle = 0;
  // The operation this memory belongs to outgrows the caches (the collectives set it from
  // kStreamingBytes): a back end may then write its copies of it around the cache (shm's
  // non-temporal stores into the ring). Unset, copies stay in cache, where the peer finds them.
  bool large = false;
};

struct Tag {
  uint64_t match = 0;
  uint64_t check = 0;
};

struct Completion {
  uint64_t op_id = 0;
  int peer = -1;
  bool is_send = false;
  Status status;
  uint64_t peer_check = 0;  // on a check mismatch: the peer's word
};

// Takes a receive's bytes where the back end already holds them (in its shared memory), in
// order, piece by piece, so the caller can reduce or copy each piece straight into its output
// instead of first receiving into a staging chunk: one pass over the data saved. Consume is
// called from Poll, before the receive's completion; `data` is valid only during the call, and
// `offset` (from the message's start) and `len` are multiples of the message's element size.
class RecvSink {
 public:
  virtual void Consume(size_t offset, const void* data, size_t len) = 0;
  // A sink on device memory (-1: host): `data` is then memory its device's queue reads (the
  // back end's DeviceQueueFor), and Consume queues its work there; the receive completes once
  // the queue has passed it.
  virtual int device() const { return -1; }

 protected:
  ~RecvSink() = default;
};

// The receive EndpointFastPath::TakeNow leaves posted for a stream's next message: its tag, and
// the memory it lands in (in the region the taken receive was posted in).
struct NextRecv {
  Tag tag;
  void* data;
};

// A small message copied out at once (EndpointFastPath::SendCopies).
struct CopyMsg {
  const void* data;
  size_t len;
  Tag tag;
};

// The optional fast paths of an endpoint, all or none: for a back end with memory its caller
// can read and write in place (shm's rings). It implements them and hands them to its Endpoint
// (Endpoint's constructor, or set_fast); without them every call below is a plain false and the
// callers take the required calls' way (PostSend, PostRecv, Poll).
class EndpointFastPath {
 public:
  // Like PostRecv, but the bytes go to `sink`. Returns false, posting nothing, where this back
  // end cannot hand bytes over in place (it has no memory the caller can read); the caller then
  // posts a PostRecv instead. `elem` is the element size the pieces are cut on.
  virtual bool PostRecvTo(RecvSink* sink, size_t len, size_t elem, Tag tag, uint64_t op_id) = 0;
  // Sends copies of small messages at once, in order, all or none, where the back end can
  // without waiting and with nothing of its own queued ahead of them: true when the bytes are
  // copied out (the memory may be reused at once) and on their way; no completion follows. False,
  // nothing sent, otherwise: the caller posts PostSends instead. For the point-to-point frames
  // (and a small payload behind its frame) and the blocking interpreter's messages, whose every
  // nanosecond is a ping-pong's.
  virtual bool SendCopies(const CopyMsg* msgs, size_t n) = 0;
  // Completes the receive posted here with `tag` and `op_id` on the caller's thread, without a
  // Poll, if its message is next on this peer's stream and has come whole: waits for it up to
  // `spins` looks where the back end spins at all (not on a crowded host). True: the bytes are
  // in the receive's memory and no completion follows for it. False: nothing changed, the
  // receive completes through Poll as ever. With `then`, a receive taken stays posted, in its
  // place and with the same op id, for the message tagged `then->tag`, into `then->data`: a
  // stream of frames keeps its receive without posting a new one (Withdraw ends it). That
  // memory must not be the memory just taken into: the receive may be completed into it by
  // another thread's Poll (a communicator sharing the link, shared_transport.h) the moment this
  // returns, while the caller still reads what it took.
  virtual bool TakeNow(Tag tag, uint64_t op_id, unsigned spins, const NextRecv* then) = 0;
  // Removes the receive posted with `op_id` if no byte of its message has come: true, and no
  // completion follows for it. False: nothing changed.
  virtual bool Withdraw(uint64_t op_id) = 0;

 protected:
  ~EndpointFastPath() = default;
};

class Endpoint {
 public:
  using Copy = CopyMsg;
  explicit Endpoint(EndpointFastPath* fast = nullptr) : fast_(fast) {}
  virtual ~Endpoint() = default;
  // The three calls every back end writes.
  virtual int peer() const = 0;
  // Segments the kernel has sent again on the link to this peer so far (tcp: TCP_INFO's total
  // retransmissions): where a collective times out, a lossy link shows here (the flight
  // recorder's dump). -1: the back end cannot tell. From the thread that holds the transport.
  virtual int64_t Retransmits() const { return -1; }
  // Both complete through Transport::Poll. Errors are reported as completions, never dropped.
  virtual void PostSend(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) = 0;
  virtual void PostRecv(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) = 0;

  // Transport::HoldEarly for this one peer, for a while: each call with `on` opens an ask that a
  // message from this peer which comes before its receive be held (up to `cap` bytes at once)
  // rather than stall the link; each call without it closes one. The link holds while an ask is
  // open, or while the transport holds for every peer. The mailbox asks while a point-to-point
  // call with this peer is open: what that call waits for (a frame, a payload sent on a CTS, a
  // send that waited for credit) may have left the peer behind a collective's message that this
  // rank has not reached yet, and must not wait behind it. A message whose match word has a bit
  // of `spare` is not held for an ask: the asker's own traffic, whose receives it posts as soon
  // as it reads their announcements (holding them would only copy them twice). From the thread
  // that holds the transport. Back ends that hold early messages anyway (ucx, ofi): nothing to do.
  virtual void AskHold(bool on, size_t cap, uint64_t spare) {
    (void)on;
    (void)cap;
    (void)spare;
  }

  // The fast paths (EndpointFastPath says what each does), or false where the back end has none.
  EndpointFastPath* fast() const { return fast_; }
  bool PostRecvTo(RecvSink* sink, size_t len, size_t elem, Tag tag, uint64_t op_id) {
    return fast_ && fast_->PostRecvTo(sink, len, elem, tag, op_id);
  }
  bool SendCopies(const Copy* msgs, size_t n) { return fast_ && fast_->SendCopies(msgs, n); }
  bool SendCopy(const void* data, size_t len, Tag tag) {
    const Copy one{data, len, tag};
    return SendCopies(&one, 1);
  }
  bool TakeNow(Tag tag, uint64_t op_id, unsigned spins, const NextRecv* then) {
    return fast_ && fast_->TakeNow(tag, op_id, spins, then);
  }
  bool Withdraw(uint64_t op_id) { return fast_ && fast_->Withdraw(op_id); }

 protected:
  void set_fast(EndpointFastPath* fast) { fast_ = fast; }

 private:
  EndpointFastPath* fast_;
};

// Segments resent on one link by the time a call timed out from which that link is called lossy
// (a timeout's message, hoop-doctor's finding): a busy, healthy link resends a few.
inline constexpr int64_t kLossyResends = 10;

struct PeerInfo {
  int rank = -1;
  std::string host;  // host name, for "same host" decisions
};

struct TransportOptions {
  int rank = 0;
  int size = 1;
  std::string host = "127.0.0.1";  // listen/advertise address
  std::string token;
  std::string comm;             // communicator name; connections of another communicator are refused
  std::vector<PeerInfo> peers;  // every rank's host (same-host back ends size themselves by it)
  // Device queues for the back ends that move device memory themselves (shm's CUDA IPC); unset:
  // none does, and device buffers are staged through host memory above the transport.
  DeviceAccess device;
  // Set: asked between the waits of Connect (at least every 20 ms); an error stops the
  // connecting with it, before the deadline (a shrink's, once a member is gone).
  std::function<Status()> give_up;
  std::string timeout_name = "HOOP_TIMEOUT";  // what set the deadline, as its errors say
};

// More ranks on this rank's host than cores this process may run on (with no host list, every
// rank counts as local): a rank that spins while it waits holds a core a peer needs, so back
// ends spin only when this is false, or hand the core over between looks.
bool HostCrowded(const TransportOptions& opts);

// Whether a wait in Poll may spin before it sleeps. A thread waiting for its own result (a
// blocking call, or a caller blocked on its Work) spins a few tens of microseconds: a reply to a
// small message comes within that, and its core has nothing else to do. A thread of hoop's that
// runs a call while its caller computes (a nonblocking call on the worker) must not take that
// core from it: it sleeps at once, and spins only while `waiters` counts a thread blocked on a
// result (re-read at each sleep's end).
struct SpinGate {
  const std::atomic<int>* waiters = nullptr;  // null: spin as ever
  bool Open() const { return !waiters || waiters->load(std::memory_order_relaxed) > 0; }
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string Name() const = 0;
  // Name() plus what was picked inside it ("ofi/tcp;ofi_rxm"), for reports.
  virtual std::string Label() const { return Name(); }
  virtual bool CanConnect(const PeerInfo& self, const PeerInfo& peer) const = 0;
  // What peers pass to Connect to reach this rank.
  virtual std::string Address() const = 0;
  // Establishes the connection to `peer` (the lower rank dials, the higher one accepts).
  virtual Status Connect(int peer, const std::string& address, Deadline deadline) = 0;
  virtual StatusOr<Region> Register(void* ptr, size_t bytes, MemKind kind) = 0;
  // Memory that lives as long as the transport (staging chunks): back ends that register
  // memory do it once here, and reuse the handle for every message.
  virtual StatusOr<Region> RegisterStaging(void* ptr, size_t bytes, MemKind kind) { return Register(ptr, bytes, kind); }
  virtual Endpoint* endpoint(int peer) = 0;
  // Makes progress; returns once at least one completion is appended, or DeadlineExceeded.
  // `gate` says whether the wait may spin before it sleeps (SpinGate).
  virtual Status Poll(std::vector<Completion>* out, Deadline deadline, SpinGate gate = {}) = 0;
  // Tells every peer (best effort, bounded time) that this rank gives up, and why; then closes.
  virtual void Abort(const std::string& cause) = 0;
  // The orderly end, before the transport is destroyed (its last communicator finalized,
  // healthy): every byte a completed send handed over reaches its peer, even when this process
  // exits right after. Waits, up to `deadline`, until each peer's side holds it (tcp: written
  // bytes acknowledged, with input drained so the close sends no reset; ucx, ofi: flushed). An
  // error names a peer that did not take them in time or is gone. Back ends whose sends complete
  // only once the bytes are in the peer's memory (shm's rings) have nothing to do.
  virtual Status Close(Deadline deadline) {
    (void)deadline;
    return Status::Ok();
  }
  // Called once every connection has carried a message both ways (select.h): every peer has
  // attached to whatever this rank offered. Back ends whose memory peers find by name drop the
  // name here, so nothing is left behind however the process ends.
  virtual void AllConnected() {}
  // From now on a message that arrives before its receive is posted is held (up to `cap` bytes
  // per peer at once) instead of stalling its link until the receive comes. Called once a
  // second communicator shares the connections (shared_transport.h): each orders its own
  // collectives, and ranks may run them in different orders (a fusion thread beside the main
  // one), so one's early message must not hold up another's behind it on the same link. Back
  // ends that hold early messages anyway (ucx, ofi) have nothing to do.
  virtual void HoldEarly(size_t cap) { (void)cap; }
  // Why the connections failed, where they failed under another communicator sharing them (a
  // lost peer, an abort, a revocation: shared_transport.h); OK otherwise. For a communicator
  // whose calls never poll (one rank), so it fails with the others.
  virtual Status Failure() { return Status::Ok(); }
  // The pipeline chunk the collectives use over this back end unless HOOP_CHUNK_BYTES says.
  virtual size_t PreferredChunkBytes() const { return 512 * 1024; }
  // The queue on which this back end moves `device`'s memory to and from every peer itself (CUDA
  // IPC), its regions registered as MemKind::kCuda; null where it cannot (the caller then stages
  // device buffers through host memory). The caller's own device work in such a run goes on it.
  virtual DeviceQueue* DeviceQueueFor(int device) {
    (void)device;
    return nullptr;
  }
  // Whether large outputs are better received into a (cache-resident) staging chunk and then
  // streamed into place, than received into place directly (see shm).
  virtual bool StageLargeCopies() const { return false; }
};

// The registry of compiled-in back ends, ordered by priority (lower first). Back ends register
// themselves from their own translation unit; collectives/ never names one.
using TransportFactory = std::function<StatusOr<std::unique_ptr<Transport>>(const TransportOptions&)>;
// `describe` says what the back end sees on this machine (library version, providers,
// devices), for hoop-info.
using TransportDescriber = std::function<std::string()>;
void RegisterTransport(const std::string& name, int priority, TransportFactory factory,
                       TransportDescriber describe = nullptr);
std::vector<std::string> RegisteredTransports();
std::string DescribeTransport(const std::string& name);
StatusOr<std::unique_ptr<Transport>> CreateTransport(const std::string& name, const TransportOptions& opts);

}  // namespace hoop
