// OfiTransport: the libfabric back end. One reliable-datagram (FI_EP_RDM) endpoint per
// communicator, an address vector filled from the addresses peers publish through the Store,
// and tagged messages: the tag is our match word, a receive names its source (directed
// receive), and the check word travels as the message's remote CQ data, so a mismatch is
// reported as such. Early messages are held by the provider (rxm keeps only the rendezvous
// header of a large one), so memory stays bounded by the senders' windows.
//
// Provider: FI_PROVIDER picks (libfabric's own variable: "tcp;ofi_rxm", "shm", ...); otherwise
// the first RDM provider with tagged messages that reaches this rank's address. Debian's
// `sockets` provider hangs on the machines we test on, so it is refused with a message.
//
// Flow control: a provider holds a message that arrives before its receive, and Debian's
// libfabric 1.17 shm provider holds those and the posted receives in one fixed pool (rx_size,
// 1024 entries): senders that run far ahead of a receiver (a flat gather in tiny chunks) fill it,
// and the receiver's next fi_trecv fails with ENOMEM. So each sender may have at most `window`
// messages at a peer that the peer has not yet taken into a receive, window = half the provider's
// receive queue shared among the peers (at least 8); a send past it waits, in order, until the
// peer returns credit: a small injected message on its own tag once it has taken half a window.
// Abort notices and credit messages themselves go outside it.
//
// Waiting: Poll spins on the completion queue briefly, then sleeps in short, growing naps
// (20 us up to 1 ms), so ranks that outnumber cores progress. A lost peer: a failed send
// reports it; a rank on this host is also watched through a pidfd. Over the shm provider a rank
// that dies holding a region's spin lock is also handled: ShmLockRescue (shm_lock_rescue.h).
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>

#include <chrono>
#include <deque>
#include <memory>
#include <vector>

#include "transport/ofi/libfabric.h"
#include "transport/ofi/shm_lock_rescue.h"
#include "transport/peer_watch.h"
#include "transport/progress_loop.h"
#include "transport/transport.h"

namespace hoop {

class OfiTransport : public Transport {
 public:
  static StatusOr<std::unique_ptr<Transport>> Create(const TransportOptions& opts);
  ~OfiTransport() override;
  std::string Name() const override { return "ofi"; }
  std::string Label() const override { return "ofi/" + provider_; }
  bool CanConnect(const PeerInfo& self, const PeerInfo& peer) const override {
    return !shm_only_ || self.host == peer.host;
  }
  std::string Address() const override { return address_; }
  Status Connect(int peer, const std::string& address, Deadline deadline) override;
  StatusOr<Region> Register(void* ptr, size_t bytes, MemKind kind) override;
  Endpoint* endpoint(int peer) override;
  Status Poll(std::vector<Completion>* out, Deadline deadline, SpinGate gate = {}) override;
  void Abort(const std::string& cause) override;
  // The shm provider's region is found by name in /dev/shm; once every peer has mapped it the
  // name goes, so a rank that dies by a signal leaves nothing there.
  void AllConnected() override;
  // The libfabric version and the RDM providers with tagged messages it lists (for hoop-info).
  static std::string Describe();
  const std::string& provider() const { return provider_; }

 private:
  // ProgressLoop's parts (progress_loop.h).
  template <class B>
  friend Status ProgressLoop(B&, const WaitStyle&, std::vector<Completion>*, Deadline, SpinGate);
  Status Progress(std::vector<Completion>* out);
  void Watch(std::vector<Completion>* out);
  Status Sleep(std::vector<Completion>* out, Deadline deadline);
  std::chrono::microseconds nap_{20};  // Sleep's, doubling to 1 ms within one Poll
  struct Op {
    fi_context ctx;  // FI_CONTEXT mode: the provider's scratch space, first
    int peer;
    bool is_send;
    bool is_abort;
    bool is_credit;  // a receive of the peer's returned credit
    uint64_t op_id;
    char* data;
    size_t len;
    Tag tag;
    bool posted = false;    // the provider holds it
    bool reported = false;  // its completion was handed out
  };
  class Peer : public Endpoint {
   public:
    Peer(OfiTransport* t, int rank) : t_(t), rank_(rank) {}
    int peer() const override { return rank_; }
    void PostSend(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) override;
    void PostRecv(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) override;

   private:
    OfiTransport* t_;
    int rank_;
  };
  struct PeerState {
    fi_addr_t addr = FI_ADDR_UNSPEC;
    std::unique_ptr<Peer> endpoint;
    std::vector<Op*> posted;
    Status failure;
    std::string abort_text;
    std::string shm_region;  // shm provider: the peer's region in /dev/shm, from its address
    bool swept = false;      // its process exited, and its regions were removed
    // Flow control (see the top): sends we may still start, sends waiting for credit, the peer's
    // messages our receives took since we last returned credit, and the credit receive's buffer.
    size_t credits = 0;
    std::deque<Op*> held;
    uint64_t taken = 0;
    uint64_t credit_in = 0;
  };

  OfiTransport(const Libfabric& fi, TransportOptions opts, fi_info* info);
  Status Open();
  Op* NewOp(int peer, bool is_send, uint64_t op_id, char* data, size_t len, Tag tag);
  void Issue(Op* op);  // posts to the provider, or queues it when the provider says "again"
  void Send(Op* op);   // Issue within the peer's credit, else holds it
  void PostCreditRecv(int peer);
  void Credited(Op* op);  // the peer returned credit: start what it held
  void Took(int peer);    // a receive took one of the peer's messages
  void ReturnCredit(int peer);
  void Complete(Op* op, Status s, uint64_t peer_check = 0);
  void Release(Op* op);
  void FailPeer(int peer, const Status& why);
  // Same-host peers whose processes exited since the last call; removes the shm provider's
  // regions of each (a killed process cannot unlink its own).
  std::vector<int> Departed();
  void RemoveRegionsOf(int peer);
  void DrainCq();
  // An abort notice is still in the provider's hands, to a peer neither gone nor stopped.
  bool AbortNoticePending();

  Libfabric fi_;  // libfabric's exported calls (loaded, not linked: libfabric.h)
  TransportOptions opts_;
  fi_info* info_;
  std::string provider_;
  bool shm_only_ = false;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_ep* ep_ = nullptr;
  std::string address_;
  std::string own_shm_region_;  // shm provider: this rank's region name, until AllConnected
  std::vector<PeerState> peers_;
  std::vector<std::unique_ptr<Op>> ops_;
  std::vector<Op*> free_;
  std::deque<Op*> again_;  // refused with -FI_EAGAIN: retried after the next completions
  size_t window_ = 0;      // flow control's window per peer; 0: none (no inject)
  std::vector<int> owed_;  // peers whose credit the provider refused for lack of room
  std::vector<Completion> completed_;
  std::vector<std::unique_ptr<char[]>> abort_bufs_;
  PeerWatch watch_;
  DeferredLosses losses_;                  // a lost peer fails after its abort notice has had time to arrive
  std::unique_ptr<ShmLockRescue> rescue_;  // shm provider: frees a lock a dying peer left taken
};

}  // namespace hoop
