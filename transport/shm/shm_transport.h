// ShmTransport: the back end for ranks on the same host. Each rank owns one memfd segment with
// an inbound ring per local peer (segment.h) and maps its peers' segments. Every message is
// copied into the peer's ring by the sender, in 32 KiB fragments, and taken out by the receiver
// while the sender fills the next: for a collective's receives, reduced or copied straight into
// the output (Endpoint::PostRecvTo), never staged. Progress happens in Poll() on the caller's thread: it spins for a
// few
// tens of microseconds, then sleeps on this rank's futex doorbell, which peers ring when they
// publish or consume a slot; so ranks that outnumber cores still make progress.
//
// A killed peer is noticed through a pidfd (PeerWatch): its pending operations fail with
// Unavailable naming the rank, never a hang.
//
// With TransportOptions::device set, device memory registers as such and moves by CUDA IPC
// (channel.h): DeviceQueueFor gives the queue that work runs on.
#pragma once

#include <memory>
#include <vector>

#include "transport/peer_watch.h"
#include "transport/progress_loop.h"
#include "transport/shm/channel.h"
#include "transport/shm/segment.h"
#include "transport/transport.h"

namespace hoop {

class ShmTransport : public Transport {
 public:
  static StatusOr<std::unique_ptr<Transport>> Create(const TransportOptions& opts);
  std::string Name() const override { return "shm"; }
  bool CanConnect(const PeerInfo& self, const PeerInfo& peer) const override { return self.host == peer.host; }
  std::string Address() const override;
  Status Connect(int peer, const std::string& address, Deadline deadline) override;
  StatusOr<Region> Register(void* ptr, size_t bytes, MemKind kind) override;
  Endpoint* endpoint(int peer) override;
  Status Poll(std::vector<Completion>* out, Deadline deadline, SpinGate gate = {}) override;
  void Abort(const std::string& cause) override;
  // Host memory: small enough that a window of staged chunks stays in L2 (docs/PERF.md, shm
  // chunk sizes). Where this host has a CUDA device and CUDA IPC is on: 16 MiB, since each chunk
  // of device memory costs a hand-over between the ranks' processes on the GPU (hundreds of
  // microseconds on an H100): 256 MiB allreduce on one H100 ran at 1.6 GB/s busbw with 128 KiB chunks, 46-64 with
  // 4 MiB, 129-139 with 16 MiB (docs/PERF.md). Every rank of the host decides alike (same
  // machine, HOOP_CUDA_IPC set job-wide), whatever its buffers, so a job that mixes host and
  // device buffers still cuts its messages the same on every rank; host buffers on such a host
  // pay for it (HOOP_CHUNK_BYTES=128K where a job moves host memory only).
  size_t PreferredChunkBytes() const override { return device_chunks_ ? kDeviceChunk : 128 * 1024; }
  static constexpr size_t kDeviceChunk = 16 << 20;
  // A plain copy into a large output reads every output line before writing it; streamed out of
  // the ring (a sink receive) with non-temporal stores it does not.
  bool StageLargeCopies() const override { return true; }
  DeviceQueue* DeviceQueueFor(int device) override;
  void HoldEarly(size_t cap) override;  // every channel's, now and later (channel_held.cc)

 private:
  ShmTransport(TransportOptions opts, std::vector<int> local_index, shm::Segment own, bool crowded);
  void CheckPeers(std::vector<Completion>* out);
  // ProgressLoop's parts (progress_loop.h).
  template <class B>
  friend Status ProgressLoop(B&, const WaitStyle&, std::vector<Completion>*, Deadline, SpinGate);
  Status Progress(std::vector<Completion>* out);
  void Watch(std::vector<Completion>* out);
  Status Sleep(std::vector<Completion>* out, Deadline deadline);  // on this rank's doorbell

  TransportOptions opts_;
  std::vector<int> local_index_;  // rank -> ring index on this host, -1 for other hosts
  shm::Segment own_;
  std::vector<shm::Segment> peer_segs_;
  std::vector<std::unique_ptr<shm::Channel>> by_rank_;
  std::vector<shm::Channel*> active_;
  PeerWatch watch_;
  bool crowded_;     // more ranks on this host than cores to run them: yield while spinning
  DeviceQueues dq_;  // CUDA IPC: device queues, made when first asked for
  size_t hold_cap_ = 0;
  bool device_chunks_ = false;  // CUDA IPC on and a device here: PreferredChunkBytes' 16 MiB
};

}  // namespace hoop
