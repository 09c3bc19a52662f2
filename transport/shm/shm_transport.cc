#include "transport/shm/shm_transport.h"

#include <sched.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "common/device.h"
#include "common/logging.h"

namespace hoop {
namespace {

// Shared memory goes first: nothing is faster between processes on one host.
const bool kRegistered = [] {
  RegisterTransport("shm", 10, &ShmTransport::Create, [] {
    return "same host only: memfd rings of " + std::to_string(shm::kSlots) + " x " +
           std::to_string(shm::kInlineMax / 1024) + " KiB per peer; receivers reduce straight out of the ring";
  });
  return true;
}();

// How long Poll spins before it sleeps: long enough to catch a peer's reply to a small message
// without a system call, short enough that ranks on shared cores do not starve each other.
constexpr auto kSpin = std::chrono::microseconds(50);
}  // namespace

StatusOr<std::unique_ptr<Transport>> ShmTransport::Create(const TransportOptions& opts) {
  (void)kRegistered;
  // Ring index of every rank on this host; with no host list, every rank counts as local.
  std::vector<int> index(static_cast<size_t>(opts.size), -1);
  int local = 0;
  for (int r = 0; r < opts.size; ++r) {
    bool same = opts.peers.empty() ||
                opts.peers[static_cast<size_t>(r)].host == opts.peers[static_cast<size_t>(opts.rank)].host;
    if (same) index[static_cast<size_t>(r)] = local++;
  }
  HOOP_ASSIGN_OR_RETURN(shm::Segment own, shm::Segment::Create(opts.rank, opts.size, static_cast<uint32_t>(local),
                                                               shm::JobHash(opts.token, opts.comm)));
  // Ranks outnumbering cores: spins hand the core over (sched_yield) between looks.
  return std::unique_ptr<Transport>(new ShmTransport(opts, std::move(index), std::move(own), HostCrowded(opts)));
}

ShmTransport::ShmTransport(TransportOptions opts, std::vector<int> local_index, shm::Segment own, bool crowded)
    : opts_(std::move(opts)),
      local_index_(std::move(local_index)),
      own_(std::move(own)),
      crowded_(crowded),
      dq_(opts_.device) {
  by_rank_.resize(static_cast<size_t>(opts_.size));
  if (dq_.available()) {
    auto n = CudaDeviceCount();
    device_chunks_ = n.ok() && *n > 0;
  }
}

std::string ShmTransport::Address() const { return std::to_string(::getpid()) + "/" + std::to_string(own_.fd()); }

Status ShmTransport::Connect(int peer, const std::string& address, Deadline) {
  const std::string ctx = "shm: connecting to rank " + std::to_string(peer);
  if (peer == opts_.rank || peer < 0 || peer >= opts_.size || local_index_[static_cast<size_t>(peer)] < 0)
    return InvalidArgument(ctx + ": not a rank on this host");
  int pid = 0, fd = 0;
  char extra = 0;
  if (std::sscanf(address.c_str(), "%d/%d%c", &pid, &fd, &extra) != 2 || pid <= 0 || fd < 0)
    return InvalidArgument(ctx + ": bad address '" + address + "'");
  auto seg = shm::Segment::Open(pid, fd, peer, opts_.size, shm::JobHash(opts_.token, opts_.comm));
  if (!seg.ok()) return seg.status().WithContext(ctx);
  HOOP_RETURN_IF_ERROR(watch_.Watch(peer, pid).WithContext(ctx));
  auto* in = own_.ring(static_cast<uint32_t>(local_index_[static_cast<size_t>(peer)]));
  auto* out = seg->ring(static_cast<uint32_t>(local_index_[static_cast<size_t>(opts_.rank)]));
  auto ch = std::make_unique<shm::Channel>(peer, in, out, &seg->header()->doorbell, crowded_,
                                           dq_.available() ? &dq_ : nullptr, pid == ::getpid());
  active_.push_back(ch.get());
  if (hold_cap_ > 0) ch->HoldEarly(hold_cap_);
  by_rank_[static_cast<size_t>(peer)] = std::move(ch);
  peer_segs_.push_back(std::move(seg).value());
  return Status::Ok();
}

StatusOr<Region> ShmTransport::Register(void* ptr, size_t bytes, MemKind kind) {
  if (kind == MemKind::kCuda && dq_.available()) {
    const int device = dq_.DeviceOf(ptr);
    if (device < 0) return InvalidArgument("shm transport: memory said to be on a CUDA device is not");
    return Region{ptr, bytes, kind, static_cast<uint64_t>(device) + 1};  // channel.h reads the device here
  }
  if (!HostVisible(kind))
    return Unimplemented("shm transport: only host memory is supported (got " + std::string(MemKindName(kind)) +
                         " memory)");
  return Region{ptr, bytes, kind, 0};
}

DeviceQueue* ShmTransport::DeviceQueueFor(int device) {
  auto q = dq_.Get(device);
  if (!q.ok()) {
    HOOP_LOG(kDebug, "shm: no CUDA IPC for device " << device << ": " << q.status().ToString());
    return nullptr;
  }
  return *q;
}

Endpoint* ShmTransport::endpoint(int peer) {
  if (peer < 0 || peer >= opts_.size) return nullptr;
  return by_rank_[static_cast<size_t>(peer)].get();
}

void ShmTransport::CheckPeers(std::vector<Completion>* out) {
  for (int peer : watch_.Exited())
    by_rank_[static_cast<size_t>(peer)]->PeerExited(Unavailable(ExitedText(peer, watch_.pid_of(peer))), out);
}

Status ShmTransport::Poll(std::vector<Completion>* out, Deadline deadline, SpinGate gate) {
  // A turn is a few loads from the rings: the slower look comes every 64.
  return ProgressLoop(*this, WaitStyle{"shm", kSpin, 63, crowded_}, out, deadline, gate);
}

Status ShmTransport::Progress(std::vector<Completion>* out) {
  for (shm::Channel* c : active_) c->Progress(out);
  return Status::Ok();
}

void ShmTransport::Watch(std::vector<Completion>* out) {
  if (watch_.Due()) CheckPeers(out);
}

Status ShmTransport::Sleep(std::vector<Completion>* out, Deadline deadline) {
  // Announce the sleep, look once more, then sleep until a peer rings (or 10 ms pass, to look at
  // the peers' processes and the deadline).
  Doorbell& bell = own_.header()->doorbell;
  const size_t start = out->size();
  uint32_t seen = bell.bell.load(std::memory_order_acquire);
  bell.sleeping.store(1, std::memory_order_seq_cst);
  bool device_busy = false;
  for (shm::Channel* c : active_) {
    c->Progress(out);
    device_busy |= c->DeviceBusy();
  }
  // A device queue rings no doorbell: while one has work of ours, look again instead.
  if (out->size() == start && !device_busy) FutexWait(&bell.bell, seen, deadline.RemainingMs(10));
  bell.sleeping.store(0, std::memory_order_relaxed);
  if (out->size() == start) CheckPeers(out);
  return Status::Ok();
}

void ShmTransport::Abort(const std::string& cause) {
  for (shm::Channel* c : active_) c->Abort(cause);
}

void ShmTransport::HoldEarly(size_t cap) {
  hold_cap_ = cap;
  for (auto& ch : by_rank_)
    if (ch) ch->HoldEarly(cap);
}

}  // namespace hoop
