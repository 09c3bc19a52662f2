// One shared-memory peer: the Endpoint under ShmTransport. Sends go into the ring in the peer's
// segment, receives come from the ring in ours (segment.h has the layout).
//
// Like the TCP back end, a receive is matched by tag against the message at the head of the
// inbound ring; a head message whose tag has no receive yet stalls the ring (the sender is held
// back by the ring's fixed size, so memory stays bounded). Sends are published in post order (a
// one-slot message posted with nothing queued ahead of it at once, inside PostSend); a
// message longer than one slot goes as consecutive fragments, so sender and receiver copy
// concurrently, each at memcpy speed.
//
// Once a second communicator shares the rings (HoldEarly), or while an ask for this peer is open
// (AskHold: a point-to-point call with it), a head message with no receive is copied out into
// memory of its own instead (up to a cap; then it stalls as above) and handed to its receive when
// that is posted (channel_held.cc): the messages behind it go on. A device descriptor is never held: it stalls as before (its sender waits for the ack).
//
// A receive posted with a sink (PostRecvTo) is handed each fragment where it lies in the ring:
// the collectives reduce or copy it straight into their output, so a message costs one copy in
// (by the sender) and one pass out (by the receiver's reduction). docs/PERF.md has the numbers
// that chose this over a single receiver-side process_vm_readv copy.
//
// Device memory (a MemKind::kCuda region, where the transport has DeviceQueues) never goes
// through the ring: its send becomes one slot holding a CUDA IPC descriptor (transport/
// device_queue.h's IpcRef), published in the send order once the device queue has passed the
// work queued before the send (what wrote that memory). The receiver maps the peer's memory
// (cached per allocation) and copies or reduces from it on its own device queue, into device or
// host memory alike; once its queue has passed that work the receive completes and it counts
// the descriptor in the ring's `acked`, which is what completes the send: the sender may write
// that memory again only then (a rendezvous, as UCX's cuda_ipc). Ring bytes from a peer's host
// memory into device memory are copied to the device on the same queue (for a sink, into a
// device bounce chunk the sink's work then reads: the queue's order keeps the next copy into it
// behind that work). channel_device.cc has these parts.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "transport/device_queue.h"
#include "transport/shm/segment.h"
#include "transport/hold_asks.h"
#include "transport/transport.h"

namespace hoop::shm {

class Channel : public Endpoint, public EndpointFastPath {
 public:
  // `in`: the ring in our segment this peer writes; `out`: the ring in the peer's segment we
  // write; `peer_bell`: the peer's doorbell; `own_bell`: ours (the peer wakes us through it).
  // `crowded`: more ranks than cores on this host (TakeNow does not spin then).
  // `dq`: the transport's device queues (CUDA IPC), or null; `same_process`: the peer is a thread
  // of this process (its descriptors are plain addresses, no IPC handle needed).
  Channel(int peer, RingHeader* in, RingHeader* out, Doorbell* peer_bell, bool crowded, DeviceQueues* dq,
          bool same_process = false);
  int peer() const override { return peer_; }
  void PostSend(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) override;
  void PostRecv(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) override;
  bool PostRecvTo(RecvSink* sink, size_t len, size_t elem, Tag tag, uint64_t op_id) override;
  // One-slot messages with no send queued ahead and a free slot each: into the ring now.
  bool SendCopies(const CopyMsg* msgs, size_t n) override;
  // A one-slot message at the head of the ring, for a receive posted with exactly its length.
  bool TakeNow(Tag tag, uint64_t op_id, unsigned spins, const NextRecv* then) override;
  bool Withdraw(uint64_t op_id) override;

  // Moves what can move without waiting; appends completions. True if anything moved.
  bool Progress(std::vector<Completion>* out);
  // The peer's process is gone: whatever cannot complete any more fails.
  void PeerExited(const Status& why, std::vector<Completion>* out);
  // Tells the peer (through its ring) that this rank gives up.
  void Abort(const std::string& cause);
  // channel_held.cc: from now on a head message with no receive is held, up to `cap` bytes at once.
  void HoldEarly(size_t cap) { holds_.early = cap; }
  // This peer's early messages held while an ask is open (Endpoint::AskHold); the ring's head is
  // looked at again at every Progress, so an ask opened while a message stalls there holds it then.
  void AskHold(bool on, size_t cap, uint64_t spare) override { holds_.Ask(on, cap, spare); }
  // Work waits on a device queue, which rings no doorbell when it gets there: do not sleep.
  bool DeviceBusy() const { return !landing_.empty() || (!sends_.empty() && sends_.front().q != nullptr); }

 private:
  struct SendOp {
    const char* data;
    size_t len;
    size_t sent = 0;
    Tag tag;
    uint64_t op_id;
    bool stream;               // written into the ring with non-temporal stores
    DeviceQueue* q = nullptr;  // device memory: goes as a descriptor once q passes `mark`
    uint64_t mark = 0;
    // Device memory CUDA cannot export (a stream-ordered pool's, say): its bytes, copied to the
    // host, go through the ring instead.
    std::shared_ptr<std::vector<char>> copy = nullptr;
  };
  struct RecvOp {
    char* data;  // nullptr: the bytes go to `sink`
    size_t len;
    Tag tag;
    uint64_t op_id;
    RecvSink* sink = nullptr;
    MemKind kind = MemKind::kHost;
    int device = -1;  // of `data` (kCuda) or of the sink
  };
  // A receive whose bytes are being moved on a device queue: complete (and, for a descriptor,
  // acknowledged) once the queue passes `mark`.
  struct Landing {
    uint64_t op_id;
    DeviceQueue* q;
    uint64_t mark;
    bool ack;
    const void* src;  // the peer's memory read (a descriptor's), for TSan (common/tsan.h)
    Status error;     // the bytes could not be moved: completes with this, in its turn
  };
  struct Unacked {
    uint64_t op_id;
    uint64_t number;   // the descriptor's, on this direction's count
    const void* data;  // the memory it described, for TSan (common/tsan.h)
  };

  bool ProgressSends(std::vector<Completion>* out);
  // Writes one slot at tail_ and publishes it (the caller has checked for room).
  void WriteSlot(const char* data, size_t total, size_t offset, size_t n, Tag tag, bool stream, uint32_t flags = 0);
  bool ProgressRecvs(std::vector<Completion>* out);
  void Fail(const Status& why, std::vector<Completion>* out);
  // channel_device.cc: a device send's descriptor (true: published), a receive from a descriptor
  // slot, a fragment of ring bytes into device memory, and the landings and acknowledgements.
  Status MarkDeviceSend(const Region& region, SendOp& op);
  bool PublishDescriptor(SendOp& s);
  Status LandDescriptor(const SlotHeader& h);
  Status LandOnDevice(const RecvOp& r, const char* payload, size_t offset, size_t len);
  StatusOr<DeviceQueue*> RecvQueue(int device) const;  // a receive's (device -1: any)
  bool ProgressDevice(std::vector<Completion>* out);
  // channel_held.cc: starts copying the head message `h` into held memory (false: not held);
  // once whole, to its receive if one is posted; a receive being posted takes a whole held
  // message with its tag (true if there was one).
  bool Hold(const SlotHeader& h);
  void HeldDone(std::vector<Completion>* out);
  bool TakeHeld(const RecvOp& r, std::vector<Completion>* out);

  const int peer_;
  RingHeader* const in_;
  RingHeader* const out_;
  Doorbell* const peer_bell_;
  const bool crowded_;

  std::deque<SendOp> sends_;
  uint64_t tail_ = 0;       // our copy of out_->tail
  uint64_t peer_head_ = 0;  // out_->head as last read (it only grows)
  std::vector<RecvOp> recvs_;
  uint64_t head_ = 0;  // our copy of in_->head
  bool in_msg_ = false;
  RecvOp cur_{};
  size_t got_ = 0;
  bool exited_ = false;
  Status exit_cause_;
  Status failure_;
  std::vector<Completion> deferred_;

  DeviceQueues* const dq_;
  const bool same_process_;
  std::deque<Landing> landing_;
  std::deque<Unacked> unacked_;
  uint64_t described_ = 0;         // descriptors this side has published
  uint64_t peer_acked_ = 0;        // out_->acked as last read
  uint64_t acked_ = 0;             // descriptors this side has acknowledged (in_->acked)
  bool cur_landing_ = false;       // cur_'s bytes went to a device queue: complete through landing_
  Status cur_error_;               // cur_'s bytes could not be moved to the device
  const void* cur_src_ = nullptr;  // a descriptor's memory, as mapped here
  std::vector<char> host_bounce_;  // a descriptor's bytes for a host sink

  struct Held {
    Tag tag;
    std::vector<char> bytes;  // its heap block stays put when the deque moves the entry
    bool whole = false;
  };
  std::deque<Held> held_;  // arrival order; the last is being filled while cur_held_
  HoldAsks holds_;         // whether and how much it holds
  size_t held_bytes_ = 0;
  bool cur_held_ = false;  // cur_ is a held message's memory, no receive of anyone's
};

}  // namespace hoop::shm
