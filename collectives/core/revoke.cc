// Revoking a communicator (hoop_comm_revoke; MPI ULFM's MPIX_Comm_revoke, NCCL's ncclCommRevoke).
//
// Any rank may revoke, on its own, from any thread. Every call on the communicator still
// running or made later, on every rank, then fails with Code::kRevoked, whose message names the
// rank that revoked it and why. How:
//  - here: the communicator is poisoned with that status, and interrupted_ is set. The waits of
//    the call running now (the executor's, the blocking interpreter's, a send's or receive's,
//    a stream's) look at it between polls of at most kInterruptLook and fail with RevokedAt;
//  - then an abort operation takes the turn, after the call running now, and tells the peers
//    through the back end's abort notice (TellPeers), marked as a revocation (RevokeNotice);
//  - a peer's transport turns that notice into a Revoked status (PeerAborted). Its running call
//    fails with it, and so does every later call. It poisons its own communicator with it and
//    passes the notice on to its own peers, so the word spreads even if the revoker dies
//    halfway through telling them.
// Communicators that share the revoked one's connections (its splits and duplicates, and the
// one it was split from: shared_transport.h) fail with it. The connections are gone after a
// revocation, so a shrunk or regrown communicator makes new ones.
#include "collectives/core/comm_core.h"
#include "common/logging.h"
#include "transport/peer_watch.h"

namespace hoop {

Status CommCore::Revoke(const std::string& why) {
  const Status revoked = Revoked("rank " + std::to_string(opts_.rank) + " revoked communicator '" + opts_.name +
                                 "': " + (why.empty() ? std::string("no reason given") : why));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (poisoned_.ok()) poisoned_ = revoked;
    Blocked();
  }
  HOOP_LOG(kWarn, revoked.message());
  interrupted_.store(true, std::memory_order_release);
  cv_.notify_all();
  // The notice goes out from the turn: at once when it is free, else after the running call stops.
  Op op;
  op.kind = CollKind::kBarrier;
  op.abort = true;
  static_cast<void>(Submit(op, true).Wait());
  return Status::Ok();
}

void CommCore::TellPeers(const Status& why) {
  if (told_peers_) return;
  transport_->Abort(why.code() == Code::kRevoked ? RevokeNotice(why.message()) : why.message());
  told_peers_ = true;
}

Status CommCore::RevokedAt(const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  return Status(poisoned_.code() == Code::kOk ? Code::kRevoked : poisoned_.code(), what + ": " + poisoned_.message());
}

}  // namespace hoop
