// MultiTransport: one Transport over several back ends, each serving some of the peers (shm
// for the ranks on this host, ucx/ofi/tcp for the others). endpoint(peer) is the chosen back
// end's own endpoint, except that regions are translated: a region registered here carries,
// in `handle`, an index into a table of each back end's own registration of it.
//
// Poll: each back end is polled without waiting; after a short spin, they are polled in turn
// with a 1 ms wait each, so a mixed job trades up to a millisecond of latency on an idle link
// for not spinning.
#pragma once

#include <memory>
#include <vector>

#include "transport/progress_loop.h"
#include "transport/transport.h"

namespace hoop {

class MultiTransport : public Transport {
 public:
  // `parts` in priority order; `choice[peer]` indexes into parts (-1 for this rank).
  MultiTransport(std::vector<std::unique_ptr<Transport>> parts, std::vector<int> choice);
  std::string Name() const override;
  bool CanConnect(const PeerInfo&, const PeerInfo&) const override { return true; }
  std::string Address() const override;
  Status Connect(int, const std::string&, Deadline) override;
  StatusOr<Region> Register(void* ptr, size_t bytes, MemKind kind) override;
  StatusOr<Region> RegisterStaging(void* ptr, size_t bytes, MemKind kind) override;
  Endpoint* endpoint(int peer) override;
  Status Poll(std::vector<Completion>* out, Deadline deadline, SpinGate gate = {}) override;
  void Abort(const std::string& cause) override;
  Status Close(Deadline deadline) override;  // every part's
  void AllConnected() override;
  void HoldEarly(size_t cap) override;          // every part's
  size_t PreferredChunkBytes() const override;  // the smallest of the parts'
  bool StageLargeCopies() const override;       // only if every part prefers it

 private:
  // ProgressLoop's parts (progress_loop.h).
  template <class B>
  friend Status ProgressLoop(B&, const WaitStyle&, std::vector<Completion>*, Deadline, SpinGate);
  Status Progress(std::vector<Completion>* out);
  void Watch(std::vector<Completion>* out);
  Status Sleep(std::vector<Completion>* out, Deadline deadline);
  Status Each(std::vector<Completion>* out, Deadline deadline);  // polls the parts in turn until one completes
  SpinGate gate_;                                                // the running Poll's, for the parts' polls
  // Its fast paths are the part's, where the part has them.
  class Routed : public Endpoint, public EndpointFastPath {
   public:
    Routed(MultiTransport* owner, size_t part, Endpoint* inner) : owner_(owner), part_(part), inner_(inner) {
      if (inner->fast()) set_fast(this);
    }
    int peer() const override { return inner_->peer(); }
    int64_t Retransmits() const override { return inner_->Retransmits(); }
    void PostSend(const Region& r, size_t off, size_t len, Tag tag, uint64_t op_id) override {
      inner_->PostSend(owner_->Translate(r, part_), off, len, tag, op_id);
    }
    void PostRecv(const Region& r, size_t off, size_t len, Tag tag, uint64_t op_id) override {
      inner_->PostRecv(owner_->Translate(r, part_), off, len, tag, op_id);
    }
    bool PostRecvTo(RecvSink* sink, size_t len, size_t elem, Tag tag, uint64_t op_id) override {
      return inner_->PostRecvTo(sink, len, elem, tag, op_id);
    }
    bool SendCopies(const CopyMsg* msgs, size_t n) override { return inner_->SendCopies(msgs, n); }
    bool TakeNow(Tag tag, uint64_t op_id, unsigned spins, const NextRecv* then) override {
      return inner_->TakeNow(tag, op_id, spins, then);
    }
    bool Withdraw(uint64_t op_id) override { return inner_->Withdraw(op_id); }
    void AskHold(bool on, size_t cap, uint64_t spare) override { inner_->AskHold(on, cap, spare); }

   private:
    MultiTransport* owner_;
    size_t part_;
    Endpoint* inner_;
  };
  StatusOr<Region> RegisterWith(void* ptr, size_t bytes, MemKind kind, bool staging);
  const Region& Translate(const Region& r, size_t part) const { return regs_[r.handle - 1][part]; }

  std::vector<std::unique_ptr<Transport>> parts_;
  std::vector<int> choice_;
  std::vector<std::unique_ptr<Routed>> routed_;
  std::vector<std::vector<Region>> regs_;  // registration i: one Region per part
};

}  // namespace hoop
