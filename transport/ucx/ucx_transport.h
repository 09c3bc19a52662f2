// UcxTransport: the UCX back end. One UCP context and worker per communicator; one UCP endpoint
// per peer, created from the worker address the peer published through the Store.
//
// Messages are UCX active messages: a 24-byte header {match, check, sender} and the payload.
// UCX sends small payloads eagerly and large ones with its rendezvous protocol (the receiver
// pulls them straight into the posted buffer: zero copies on our side). An arriving message is
// delivered into the receive posted for (sender, match); one that comes early is held by UCX
// (persistent eager data, or the rendezvous descriptor) until its receive is posted, so we
// never copy it and memory stays bounded by the senders' windows.
//
// Registration: staging chunks are mapped once (ucp_mem_map) and their handles passed with
// every operation on them; user buffers go through UCX's own registration cache.
//
// Waiting: Poll spins on ucp_worker_progress briefly, then arms the worker and sleeps on its
// event fd. A peer lost is seen by UCX's error handling (peer mode) on network transports and
// by PeerWatch (pidfd) for ranks on this host.
#pragma once

#include <ucp/api/ucp.h>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "transport/peer_watch.h"
#include "transport/progress_loop.h"
#include "transport/transport.h"

namespace hoop {

class UcxTransport : public Transport {
 public:
  static StatusOr<std::unique_ptr<Transport>> Create(const TransportOptions& opts);
  ~UcxTransport() override;
  std::string Name() const override { return "ucx"; }
  bool CanConnect(const PeerInfo&, const PeerInfo&) const override { return true; }
  std::string Address() const override { return address_; }
  Status Connect(int peer, const std::string& address, Deadline deadline) override;
  StatusOr<Region> Register(void* ptr, size_t bytes, MemKind kind) override;
  StatusOr<Region> RegisterStaging(void* ptr, size_t bytes, MemKind kind) override;
  Endpoint* endpoint(int peer) override;
  Status Poll(std::vector<Completion>* out, Deadline deadline, SpinGate gate = {}) override;
  void Abort(const std::string& cause) override;

  // What this UCX sees: version and the transports/devices it would use (for hoop-info).
  static std::string Describe();

 private:
  // ProgressLoop's parts (progress_loop.h).
  template <class B>
  friend Status ProgressLoop(B&, const WaitStyle&, std::vector<Completion>*, Deadline, SpinGate);
  Status Progress(std::vector<Completion>* out);
  void Watch(std::vector<Completion>* out);
  Status Sleep(std::vector<Completion>* out, Deadline deadline);
  struct Header {
    uint64_t match;
    uint64_t check;
    int32_t sender;
    uint32_t kind;  // 0: data, 1: abort (payload: the cause)
  };
  // One posted operation; its address is UCX's user_data, so it lives in a stable node.
  struct Op {
    UcxTransport* owner;
    int peer;
    bool is_send;
    uint64_t op_id;
    char* data;
    size_t len;
    Tag tag;
    ucp_mem_h memh;
    Header header;          // sends: kept alive until UCX is done with it
    bool in_ucx = false;    // UCX holds a request for it (its callback is still to come)
    bool reported = false;  // its completion has been handed out
  };
  // A message that arrived before its receive was posted.
  struct Early {
    Header header;
    void* data;
    size_t len;
    bool rndv;
  };
  class Peer : public Endpoint {
   public:
    Peer(UcxTransport* t, int rank) : t_(t), rank_(rank) {}
    int peer() const override { return rank_; }
    void PostSend(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) override;
    void PostRecv(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) override;

   private:
    UcxTransport* t_;
    int rank_;
  };
  struct PeerState {
    ucp_ep_h ep = nullptr;
    std::unique_ptr<Peer> endpoint;
    std::unordered_map<uint64_t, Op*> recvs;    // posted receives by match
    std::unordered_map<uint64_t, Early> early;  // arrived messages by match
    std::vector<Op*> inflight;                  // handed to UCX, not completed yet
    Status failure;
    int pid = -1;
  };

  UcxTransport(TransportOptions opts, ucp_context_h ctx, ucp_worker_h worker, int efd, std::string address);
  static ucs_status_t OnMessage(void* arg, const void* header, size_t header_len, void* data, size_t len,
                                const ucp_am_recv_param_t* param);
  static void OnSendDone(void* request, ucs_status_t status, void* user);
  static void OnRecvDone(void* request, ucs_status_t status, size_t len, void* user);
  static void OnPeerError(void* arg, ucp_ep_h ep, ucs_status_t status);
  Op* NewOp(int peer, bool is_send, uint64_t op_id, const Region& r, size_t offset, size_t len, Tag tag);
  void Deliver(Op* op, const Early& msg);
  // Progresses the worker until `requests` finish (each then freed) or `limit` passes.
  void Settle(std::vector<void*>* requests, std::chrono::milliseconds limit);
  void Start(Op* op, ucs_status_ptr_t r, const char* what);
  void Complete(Op* op, Status s, uint64_t peer_check = 0);
  void MatchFresh();
  void FailPeer(int peer, const Status& why);
  PeerState* state(int peer) { return peer >= 0 && peer < opts_.size ? &peers_[static_cast<size_t>(peer)] : nullptr; }

  TransportOptions opts_;
  ucp_context_h ctx_;
  ucp_worker_h worker_;
  int efd_;
  std::string address_;
  std::vector<PeerState> peers_;
  std::vector<std::unique_ptr<Op>> ops_;  // every Op ever made; reused through free_
  std::vector<Op*> free_;
  std::vector<std::pair<int, uint64_t>> fresh_;  // (peer, match) arrived in the last progress
  std::vector<std::pair<int, Status>> aborts_;   // abort notices from the last progress
  std::vector<Completion> completed_;            // filled by callbacks, drained by Poll
  std::map<const void*, ucp_mem_h> staging_;
  PeerWatch watch_;
  bool aborted_ = false;  // Abort() was called: the endpoints close by force
  // Abort's notices still on their way after its own wait: given more time before the endpoints
  // close by force (which would cancel them), so a revocation reaches a slow peer.
  std::vector<void*> abort_sends_;
  DeferredLosses losses_;  // a lost peer fails after its abort notice has had time to arrive
};

}  // namespace hoop
