// CommCore::Send and Recv: checked here, queued like the collectives, then handed to the
// mailbox (mailbox.h), which completes them whenever the peer does its part. A blocking call
// with nothing queued ahead drives the transport on the caller's thread until it is done.
// SendNow and RecvNow are that blocking call without a Work: the C API's hoop_send/hoop_recv,
// where a ping-pong's every microsecond is the caller's.
#include <cstdint>
#include <string>

#include "collectives/core/comm_core.h"
#include "common/device.h"
#include "common/extent.h"

namespace hoop {

Status CommCore::CheckP2p(bool is_send, const Buffer& b, int peer, int tag, bool on_stream, bool direct) const {
  const char* call = is_send ? "send" : "receive";
  auto bad = [&](const std::string& why) {
    return InvalidArgument("rank " + std::to_string(opts_.rank) + ": " + call + ": " + why);
  };
  const bool any_ok = !is_send;
  if (peer < (any_ok ? kAnySource : 0) || peer >= opts_.size)
    return bad("peer " + std::to_string(peer) + " is not a rank (size " + std::to_string(opts_.size) + ")" +
               (any_ok ? " nor HOOP_ANY_SOURCE (-1)" : ""));
  if (tag < 0) return bad("tag " + std::to_string(tag) + " is negative");
  if (on_stream && !opts_.stream_ops) {
    auto devices = CudaDeviceCount();
    if (!devices.ok())
      return Status(devices.status().code(), "rank " + std::to_string(opts_.rank) + ": " + call +
                                                 ": a CUDA stream was given, but: " + devices.status().message());
  }
  // Device memory is staged before the call is posted (at the call on a stream, else by
  // Send/Recv), or moved by the transport itself (DirectP2p: `direct`).
  if (!HostVisible(b.kind) && !((on_stream || direct) && b.kind == MemKind::kCuda))
    return Status(Code::kUnimplemented, "rank " + std::to_string(opts_.rank) + ": " + call + ": " +
                                            MemKindName(b.kind) + " memory is not supported yet (host memory only)");
  if (b.count > 0 && b.data == nullptr) return bad("buffer is null with count " + std::to_string(b.count));
  if (std::string why = ExtentProblem(b.data, b.count, b.dtype); !why.empty()) return bad("buffer " + why);
  if (!HostReadable(b)) return bad("buffer" + Unreadable(b));
  // Pieces are numbered in 24 bits (mailbox.h). (A product, not a division: this is on every
  // small send's path. ExtentProblem bounded the byte count below 2^59.)
  const size_t piece = mailbox_->piece_bytes();
  const size_t most = piece < (size_t{1} << 39) ? piece << 24 : SIZE_MAX;
  if (b.count * DTypeSize(b.dtype) >= most)
    return bad("count " + std::to_string(b.count) + " x " + DTypeName(b.dtype) + " is more than the " +
               std::to_string(piece << 24) + " bytes one message can carry (2^24 pieces of HOOP_CHUNK_BYTES)");
  return Status::Ok();
}

namespace {
// What a send or receive of `b` asks for, in a call that is new or done with (its completion is
// left as it is).
void Prepare(P2pCall& c, bool is_send, const Buffer& b, int peer, int tag, std::shared_ptr<RecvInfo> info) {
  c.is_send = is_send;
  c.peer = peer;
  c.tag = tag;
  c.data = b.data;
  c.count = b.count;
  c.dtype = b.dtype;
  c.kind = b.kind;
  c.info = std::move(info);
  c.deadline = Deadline::Never();
  c.done = false;
  c.status = Status::Ok();
}

std::shared_ptr<P2pCall> MakeCall(bool is_send, const Buffer& b, int peer, int tag, std::shared_ptr<RecvInfo> info) {
  auto c = std::make_shared<P2pCall>();
  Prepare(*c, is_send, b, peer, tag, std::move(info));
  return c;
}
}  // namespace

Work CommCore::Send(const Buffer& given, int peer, int tag, const CallOptions& o) {
  const Buffer in = Located(given);
  Op op;
  op.kind = CollKind::kBarrier;
  if (o.stream) {  // staged at the call, on the stream (EnterStreamP2p)
    op.p2p = MakeCall(true, in, peer, tag, nullptr);
    op.stream = o.stream;
    return Submit(std::move(op), false);
  }
  if (in.kind == MemKind::kCuda) {
    if (auto direct = DirectP2p(true, in, peer, tag, nullptr)) return Submit(std::move(*direct), o.blocking);
    auto host = StageP2p(true, in);
    if (!host.ok()) return Work::MakeRefused(host.status());
    op.p2p = MakeCall(true, Buffer{(*host)->data(), in.count, in.dtype, MemKind::kHost}, peer, tag, nullptr);
    op.p2p->staged = std::move(*host);
    return Submit(std::move(op), o.blocking);
  }
  op.p2p = MakeCall(true, in, peer, tag, nullptr);
  return Submit(std::move(op), o.blocking);
}

Work CommCore::Recv(const Buffer& given, int peer, int tag, std::shared_ptr<RecvInfo> info, const CallOptions& o) {
  const Buffer out = Located(given);
  Op op;
  op.kind = CollKind::kBarrier;
  if (o.stream) {
    op.p2p = MakeCall(false, out, peer, tag, std::move(info));
    op.stream = o.stream;
    return Submit(std::move(op), false);
  }
  if (out.kind == MemKind::kCuda) {
    if (auto direct = DirectP2p(false, out, peer, tag, info)) return Submit(std::move(*direct), o.blocking);
    auto host = StageP2p(false, out);
    if (!host.ok()) return Work::MakeRefused(host.status());
    if (!info) info = std::make_shared<RecvInfo>();  // the received length, for the copy back
    op.p2p = MakeCall(false, Buffer{(*host)->data(), out.count, out.dtype, MemKind::kHost}, peer, tag, info);
    op.p2p->staged = std::move(*host);
    P2pCall* c = op.p2p.get();
    op.p2p->after = [this, c, out] { return UnstageP2p(out, *c->staged, c->info->count * DTypeSize(out.dtype)); };
    return Submit(std::move(op), o.blocking);
  }
  op.p2p = MakeCall(false, out, peer, tag, std::move(info));
  return Submit(std::move(op), o.blocking);
}

Status CommCore::SendNow(const Buffer& given, int peer, int tag, bool* refused) {
  const Buffer in = Located(given);
  if (in.kind == MemKind::kCuda && DirectP2pQueue(in)) {  // queued like Send, and waited for
    Work w = Send(in, peer, tag, CallOptions{});
    if (refused) *refused = w.Refused();
    return w.Wait();
  }
  if (in.kind == MemKind::kCuda) {
    auto host = StageP2p(true, in);
    if (!host.ok()) {
      if (refused) *refused = true;
      return host.status();
    }
    return RunNow(true, Buffer{(*host)->data(), in.count, in.dtype, MemKind::kHost}, peer, tag, nullptr, refused);
  }
  return RunNow(true, in, peer, tag, nullptr, refused);
}

Status CommCore::RecvNow(const Buffer& given, int peer, int tag, RecvInfo* info, bool* refused) {
  const Buffer out = Located(given);
  if (out.kind == MemKind::kCuda && DirectP2pQueue(out)) {
    auto got = std::make_shared<RecvInfo>();
    Work w = Recv(out, peer, tag, got, CallOptions{});
    if (refused) *refused = w.Refused();
    Status s = w.Wait();
    if (s.ok() && info) *info = *got;
    return s;
  }
  if (out.kind == MemKind::kCuda) {
    auto host = StageP2p(false, out);
    if (!host.ok()) {
      if (refused) *refused = true;
      return host.status();
    }
    RecvInfo got;
    HOOP_RETURN_IF_ERROR(
        RunNow(false, Buffer{(*host)->data(), out.count, out.dtype, MemKind::kHost}, peer, tag, &got, refused));
    if (info) *info = got;
    return UnstageP2p(out, **host, got.count * DTypeSize(out.dtype));
  }
  return RunNow(false, out, peer, tag, info, refused);
}

DeviceQueue* CommCore::DirectP2pQueue(const Buffer& b) {
  // The transport has a queue for the device only where it moves device memory to every peer.
  if (b.data == nullptr) return nullptr;  // an empty buffer may have no address: staged (nothing)
  return b.device < 0 ? nullptr : transport_->DeviceQueueFor(b.device);
}

std::optional<CommCore::Op> CommCore::DirectP2p(bool is_send, const Buffer& b, int peer, int tag,
                                                std::shared_ptr<RecvInfo> info) {
  DeviceQueue* q = DirectP2pQueue(b);
  if (q == nullptr) return std::nullopt;
  // The plain form starts after the caller's CUDA work before it (which may still read or write
  // the buffer): waited for here, as the staging's copy on the legacy stream would.
  if (!opts_.device_access && !CudaStreamSync(nullptr).ok()) return std::nullopt;  // staged: it says why
  Op op;
  op.kind = CollKind::kBarrier;
  op.p2p = MakeCall(is_send, b, peer, tag, std::move(info));
  op.p2p->queue = q;
  return op;
}

std::optional<Status> CommCore::RunNowAtOnce(bool is_send, const Buffer& b, int peer, int tag, RecvInfo* info,
                                             bool* refused, NowLook& look) {
  if (!is_send && peer < 0) return std::nullopt;  // from any rank: posted and polled
  if (!PlainP2p(is_send, b, peer, tag))
    if (Status bad = CheckP2p(is_send, b, peer, tag); !bad.ok()) {
      EndTurn();
      if (refused) *refused = true;
      return bad;
    }
  const size_t bytes = b.count * DTypeSize(b.dtype);
  if (is_send) {
    // Small enough to ride in its frame, or to go with it as one piece the back end copies out
    // at once, with credit and nothing ahead of it: sent here, with no call object, and done.
    if (!mailbox_->SendSmall(peer, tag, b.data, bytes, b.dtype)) return std::nullopt;
    FlushFrames(Deadline::Never());
    EndTurn();
    return Status::Ok();
  }
  // A receive from one peer first waits on that peer's frame stream alone (tens of microseconds,
  // where the back end spins at all): a ping-pong's reply is taken where it lies, without the
  // transport's poll loop and the hub's routing, and one inside its frame is delivered with no
  // post at all. Whatever else comes, or nothing, goes on in RunNow. The deadline is read before
  // the spin, where it costs nothing: the post may follow the message's arrival.
  look.due = Deadline::After(opts_.timeout);
  const auto got = mailbox_->TakeInline(peer, tag, b.data, bytes, b.dtype, info, kNowTakeSpins);
  if (got == Mailbox::Taken::kMine) {
    FlushFrames(Deadline::Never());  // a credit frame it may have sent
    EndTurn();
    return Status::Ok();
  }
  look.looked = got == Mailbox::Taken::kNothing;
  look.taken = got == Mailbox::Taken::kOther;  // handled once the receive is posted
  return std::nullopt;
}

std::shared_ptr<P2pCall> CommCore::NowCall(bool here, bool is_send, const Buffer& b, int peer, int tag,
                                           std::shared_ptr<RecvInfo> at) {
  // The last such call's object, unless something still holds it: no allocation per call (only
  // the turn's holder touches it).
  if (here && now_call_.use_count() == 1) {
    Prepare(*now_call_, is_send, b, peer, tag, std::move(at));  // `complete` stays as set when it was made
    return now_call_;
  }
  std::shared_ptr<P2pCall> call = MakeCall(is_send, b, peer, tag, std::move(at));
  // The call owns its result, and the mailbox holds the call until it completes, so this
  // completion captures nothing it could outlive.
  P2pCall* c = call.get();
  c->complete = [c](const Status& s) {
    c->status = s;
    c->done = true;
  };
  if (here) now_call_ = call;
  return call;
}

Status CommCore::RunNow(bool is_send, const Buffer& b, int peer, int tag, RecvInfo* info, bool* refused) {
  // The turn, free and with nothing queued, stopping or failed: no lock. Else the queue.
  const bool here = TryTurn();
  // Recorded here when run here; queued, Submit records it.
  const uint64_t trace = here ? TraceNow(is_send, b, peer, tag) : 0;
  NowLook look;
  if (here)
    if (std::optional<Status> done = RunNowAtOnce(is_send, b, peer, tag, info, refused, look)) {
      recorder_->Ended(trace, *done);
      DumpIfFailed(*done);
      return *done;
    }
  // The caller's RecvInfo, without a copy or an allocation: the call ends before this returns.
  std::shared_ptr<RecvInfo> at = info ? std::shared_ptr<RecvInfo>(std::shared_ptr<void>(), info) : nullptr;
  std::shared_ptr<P2pCall> call = NowCall(here, is_send, b, peer, tag, std::move(at));
  call->deadline = look.due;  // Never: Post sets it
  call->ask_at_post = !here;  // DriveNow asks once it must wait
  // (A call run here was checked above already, but for a receive from any rank.)
  if (Status bad = here && (is_send || peer >= 0) ? Status::Ok() : CheckP2p(*call); !bad.ok()) {
    recorder_->Ended(trace, bad);
    if (here) EndTurn();
    if (refused) *refused = true;
    return bad;
  }
  if (!here) {
    // Something is ahead of it (or the communicator failed, which RunOne words): the queue.
    Op op;
    op.kind = CollKind::kBarrier;
    op.p2p = std::move(call);
    Status queued = Submit(std::move(op), true).Wait();
    DumpIfFailed(queued);
    return queued;
  }
  Status result = DriveNow(std::move(call), is_send, peer, look);
  recorder_->Ended(trace, result);
  DumpIfFailed(result);
  return result;
}

uint64_t CommCore::TraceNow(bool is_send, const Buffer& b, int peer, int tag) {
  if (!recorder_->on()) return 0;
  TraceCall t;
  t.send = is_send;
  t.recv = !is_send;
  t.peer = peer;
  t.tag = tag;
  t.dtype = b.dtype;
  t.count = b.count;
  t.mem = b.kind;
  const uint64_t id = recorder_->Begun(t, -1, Algo::kAuto);
  if (name_pending_.load(std::memory_order_relaxed)) [[unlikely]]
    if (auto name = TakeName()) recorder_->Name(id, *name);
  return id;
}

Status CommCore::DriveNow(std::shared_ptr<P2pCall> call, bool is_send, int peer, const NowLook& look) {
  P2pCall* c = call.get();
  mailbox_->Post(std::move(call));
  if (look.taken) mailbox_->HandleTaken(peer, kNowTakeSpins);  // after the post: a payload goes straight in
  // Expire() fails the call at its deadline, or the mailbox turns fatal; EndTurn then fails
  // every call still pending, this one included: either way it is done before this returns.
  // Polls wait 100 ms at most, the first until 100 ms after the post (found from the call's
  // deadline: no clock read on the way), each later one 100 ms from when the last came back empty.
  constexpr auto kSlice = std::chrono::milliseconds(100);
  if (!c->done && !is_send && peer >= 0)
    while (!c->done && mailbox_->TakeFrame(peer, look.looked ? 0 : kNowTakeSpins)) {
    }
  if (!c->done) {
    // From here it waits: its peer's collective messages that come first are held aside.
    mailbox_->AskHold(*c, true);
    Deadline slice = Deadline::At(c->deadline.at() - opts_.timeout + kSlice);
    while (!c->done && mailbox_->fatal().ok() && !Interrupted())
      if (!mailbox_->Progress(slice)) slice = Deadline::After(kSlice);
    if (!c->done && Interrupted())
      mailbox_->FailAll(RevokedAt("rank " + std::to_string(opts_.rank) + ": " +
                                  (is_send ? "send to " : "receive from ") + std::to_string(peer)));
  }
  // A small send is done at once (with no deadline), inside a frame the transport may not have
  // taken yet: it is polled out before this returns, for HOOP_TIMEOUT at most (past it, the
  // worker goes on). The message is on its way already: the clock is read off its path.
  FlushFrames(c->deadline);
  EndTurn();
  if (!c->done) return Internal("rank " + std::to_string(opts_.rank) + ": point-to-point call left pending");
  return c->status;
}

void CommCore::RunP2p(const Op& op, bool caller_waits) {
  std::shared_ptr<Work::State> state = op.state;
  P2pCall* call = op.p2p.get();  // owns this completion: a raw pointer outlives nothing
  // On a stream: released when the call ends, in whatever order calls end (only the ticket: the
  // mailbox may complete it after this communicator is gone).
  const StreamTicket ticket = op.ticket;
  // Recorded as it starts (under the turn); its completion may come on another thread.
  const uint64_t trace = recorder_->on() ? recorder_->Begun(TraceOf(op), -1, Algo::kAuto) : 0;
  NameRecord(trace, op);
  std::shared_ptr<FlightRecorder> rec = trace ? recorder_ : nullptr;
  op.p2p->complete = [state, call, ticket, rec, trace](const Status& s) {
    const Status result = s.ok() && call->after ? call->after() : s;
    if (rec) rec->Ended(trace, result);
    if (ticket.seq != 0) StreamOrder::Release(ticket);
    {
      std::lock_guard<std::mutex> lock(state->mu);
      state->done = true;
      state->status = result;
    }
    state->cv.notify_all();
  };
  if (ticket.seq != 0) {
    const std::string what =
        "rank " + std::to_string(opts_.rank) + ": " + (call->is_send ? "send" : "receive") + ": on a CUDA stream";
    Status ready = op.stage_error.ok() ? WaitStreamInput(ticket) : op.stage_error;
    if (!ready.ok()) {
      call->complete(ready.WithContext(what));
      return;
    }
  }
  mailbox_->Post(op.p2p);
  if (!caller_waits) return;
  auto done = [&] {
    std::lock_guard<std::mutex> lock(state->mu);
    return state->done;
  };
  // Expire() fails the call at its deadline, or the mailbox turns fatal: either ends this. Its
  // frames are polled out as in RunNow.
  while (!done() && mailbox_->fatal().ok() && !Interrupted())
    mailbox_->Progress(Deadline::After(std::chrono::milliseconds(100)));
  if (!done() && Interrupted())
    mailbox_->FailAll(RevokedAt("rank " + std::to_string(opts_.rank) + ": " +
                                (call->is_send ? "send to " : "receive from ") + std::to_string(call->peer)));
  FlushFrames(op.p2p->deadline);
}

void CommCore::FlushFrames(Deadline flush) {
  if (!mailbox_->FramesOut() || !mailbox_->fatal().ok() || Interrupted()) return;
  if (flush.IsNever()) flush = Deadline::After(opts_.timeout);
  while (mailbox_->FramesOut() && mailbox_->fatal().ok() && !Interrupted() && mailbox_->Progress(flush)) {
  }
}

}  // namespace hoop
