// Communicator::Send and Recv: checked here, queued like the collectives, then handed to the
// mailbox (mailbox.h), which completes them whenever the peer does its part. A blocking call
// with nothing queued ahead drives the transport on the caller's thread until it is done.
#include <string>

#include "collectives/communicator.h"
#include "common/extent.h"

namespace hoop {

Status Communicator::CheckP2p(const P2pCall& c) const {
  const std::string call = c.is_send ? "send" : "receive";
  auto bad = [&](const std::string& why) {
    return InvalidArgument("rank " + std::to_string(opts_.rank) + ": " + call + ": " + why);
  };
  const bool any_ok = !c.is_send;
  if (c.peer < (any_ok ? kAnySource : 0) || c.peer >= opts_.size)
    return bad("peer " + std::to_string(c.peer) + " is not a rank (size " + std::to_string(opts_.size) + ")" +
               (any_ok ? " nor HOOP_ANY_SOURCE (-1)" : ""));
  if (c.tag < 0) return bad("tag " + std::to_string(c.tag) + " is negative");
  if (c.kind != MemKind::kHost)
    return Status(Code::kUnimplemented, "rank " + std::to_string(opts_.rank) + ": " + call + ": " + MemKindName(c.kind) +
                                            " memory is not supported yet (host memory only)");
  if (c.count > 0 && c.data == nullptr) return bad("buffer is null with count " + std::to_string(c.count));
  if (std::string why = ExtentProblem(c.data, c.count, c.dtype); !why.empty()) return bad("buffer " + why);
  // Pieces are numbered in 24 bits (mailbox.h).
  const size_t piece = opts_.chunk_bytes ? opts_.chunk_bytes : transport_->PreferredChunkBytes();
  if (c.count * DTypeSize(c.dtype) / piece >= (size_t{1} << 24))
    return bad("count " + std::to_string(c.count) + " x " + DTypeName(c.dtype) + " is more than the " +
               std::to_string(piece << 24) + " bytes one message can carry (2^24 pieces of HOOP_CHUNK_BYTES)");
  return Status::Ok();
}

namespace {
std::shared_ptr<P2pCall> MakeCall(bool is_send, const Buffer& b, int peer, int tag, std::shared_ptr<RecvInfo> info) {
  auto c = std::make_shared<P2pCall>();
  c->is_send = is_send;
  c->peer = peer;
  c->tag = tag;
  c->data = b.data;
  c->count = b.count;
  c->dtype = b.dtype;
  c->kind = b.kind;
  c->info = std::move(info);
  return c;
}
}  // namespace

Work Communicator::Send(const Buffer& in, int peer, int tag, const CallOptions& o) {
  Op op;
  op.kind = CollKind::kBarrier;
  op.p2p = MakeCall(true, in, peer, tag, nullptr);
  return Submit(std::move(op), o.blocking);
}

Work Communicator::Recv(const Buffer& out, int peer, int tag, std::shared_ptr<RecvInfo> info, const CallOptions& o) {
  Op op;
  op.kind = CollKind::kBarrier;
  op.p2p = MakeCall(false, out, peer, tag, std::move(info));
  return Submit(std::move(op), o.blocking);
}

void Communicator::RunP2p(const Op& op, bool caller_waits) {
  std::shared_ptr<Work::State> state = op.state;
  op.p2p->complete = [state](const Status& s) {
    {
      std::lock_guard<std::mutex> lock(state->mu);
      state->done = true;
      state->status = s;
    }
    state->cv.notify_all();
  };
  mailbox_->Post(op.p2p);
  if (!caller_waits) return;
  auto done = [&] {
    std::lock_guard<std::mutex> lock(state->mu);
    return state->done;
  };
  // Expire() fails the call at its deadline, or the mailbox turns fatal: either ends this.
  while (!done() && mailbox_->fatal().ok()) mailbox_->Progress(Deadline::After(std::chrono::milliseconds(100)));
}

}  // namespace hoop
