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
// A receive posted with a sink (PostRecvTo) is handed each fragment where it lies in the ring:
// the collectives reduce or copy it straight into their output, so a message costs one copy in
// (by the sender) and one pass out (by the receiver's reduction). docs/PERF.md has the numbers
// that chose this over a single receiver-side process_vm_readv copy.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "transport/shm/segment.h"
#include "transport/transport.h"

namespace hoop::shm {

class Channel : public Endpoint {
 public:
  // `in`: the ring in our segment this peer writes; `out`: the ring in the peer's segment we
  // write; `peer_bell`: the peer's doorbell; `own_bell`: ours (the peer wakes us through it).
  // `crowded`: more ranks than cores on this host (TakeNow does not spin then).
  Channel(int peer, RingHeader* in, RingHeader* out, Doorbell* peer_bell, bool crowded);
  int peer() const override { return peer_; }
  void PostSend(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) override;
  void PostRecv(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) override;
  bool PostRecvTo(RecvSink* sink, size_t len, size_t elem, Tag tag, uint64_t op_id) override;
  // One-slot messages with no send queued ahead and a free slot each: into the ring now.
  bool SendCopies(const Copy* msgs, size_t n) override;
  // A one-slot message at the head of the ring, for a receive posted with exactly its length.
  bool TakeNow(Tag tag, uint64_t op_id, unsigned spins, const Tag* then) override;
  bool Withdraw(uint64_t op_id) override;

  // Moves what can move without waiting; appends completions. True if anything moved.
  bool Progress(std::vector<Completion>* out);
  // The peer's process is gone: whatever cannot complete any more fails.
  void PeerExited(const Status& why, std::vector<Completion>* out);
  // Tells the peer (through its ring) that this rank gives up.
  void Abort(const std::string& cause);

 private:
  struct SendOp {
    const char* data;
    size_t len;
    size_t sent = 0;
    Tag tag;
    uint64_t op_id;
    bool stream;  // written into the ring with non-temporal stores
  };
  struct RecvOp {
    char* data;  // nullptr: the bytes go to `sink`
    size_t len;
    Tag tag;
    uint64_t op_id;
    RecvSink* sink = nullptr;
  };

  bool ProgressSends(std::vector<Completion>* out);
  // Writes one slot at tail_ and publishes it (the caller has checked for room).
  void WriteSlot(const char* data, size_t total, size_t offset, size_t n, Tag tag, bool stream);
  bool ProgressRecvs(std::vector<Completion>* out);
  void Fail(const Status& why, std::vector<Completion>* out);

  const int peer_;
  RingHeader* const in_;
  RingHeader* const out_;
  Doorbell* const peer_bell_;
  const bool crowded_;

  std::deque<SendOp> sends_;
  uint64_t tail_ = 0;              // our copy of out_->tail
  uint64_t peer_head_ = 0;         // out_->head as last read (it only grows)
  std::vector<RecvOp> recvs_;
  uint64_t head_ = 0;  // our copy of in_->head
  bool in_msg_ = false;
  RecvOp cur_{};
  size_t got_ = 0;
  bool exited_ = false;
  Status exit_cause_;
  Status failure_;
  std::vector<Completion> deferred_;
};

}  // namespace hoop::shm
