// Mailbox, a tagged channel over any Transport: point-to-point messages (send/recv with a peer
// and a tag), beside the collectives that share the transport (the Communicator's sends and
// receives go through it; a back end with tag matching of its own could map onto it).
//
// The transports match a receive by an exact tag and leave a message nobody posted for at the
// head of its stream, which is right for the collectives (every rank knows what comes next) and
// wrong for point-to-point (receives come in any order, any source, late). So every message
// travels behind a 64-byte frame on a stream of frames between each pair, and every rank always
// keeps a receive posted for the next frame from every peer: a frame never stalls a link.
//
//  - eager (up to kEagerMax bytes, as far as credit allows): the frame, then the payload (in the
//    frame itself up to 24 bytes). The receiver posts the payload's receive on seeing the frame:
//    into the matching receive's buffer when one is posted, else into a buffer of its own, held
//    until a receive matches it (an "unexpected" message).
//  - rendezvous (larger, or out of credit): the frame alone (RTS); the receiver answers with a
//    CTS frame once a matching receive is posted, and the payload then goes straight into it.
//  - credit bounds what a receiver holds: each sender may have HOOP_UNEXPECTED_BYTES / (ranks-1)
//    bytes of frames and eager payloads unreturned at a receiver; the receiver returns credit in
//    the frames it sends anyway, or in a credit frame once half is owed. Out of credit, a send
//    waits (in order behind earlier ones to that peer) until credit comes back.
//
// Payloads travel in pieces of at most the frame's `piece` bytes, each its own tagged message.
// Frames and pieces from one sender arrive in the order sent, and receives match in post order,
// arrivals in arrival order: two messages between one pair with one tag are received in the
// order they were sent.
//
// Device memory (P2pCall::queue, CUDA IPC over shm) goes by rendezvous, each payload piece as a
// descriptor the receiver copies from (transport/shm/channel.h); what is held here on its way
// (a small message in its frame, an unexpected eager payload) is copied into a device receive on
// its queue.
//
// Threading: the transport's owner only (the communicator's worker, or a blocking caller holding
// it). Completions of point-to-point traffic (op ids with kP2pBit) reach Handle() from the
// collectives' executor while a collective runs, and from Progress() otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/deadline.h"
#include "common/dtype.h"
#include "common/status.h"
#include "transport/shared_transport.h"
#include "transport/tagged/recv_info.h"
#include "transport/transport.h"

namespace hoop {

inline constexpr uint64_t kP2pBit = uint64_t{1} << 63;  // in op ids and match words of this traffic
inline constexpr size_t kEagerMax = 64 * 1024;

// One send or receive of the API.
struct P2pCall {
  bool is_send = false;
  int peer = -1;  // a receive may say kAnySource
  int tag = 0;
  void* data = nullptr;
  size_t count = 0;
  DType dtype = DType::kU8;
  MemKind kind = MemKind::kHost;
  std::shared_ptr<RecvInfo> info;               // a receive's result, written before `complete` (may be null)
  std::function<void(const Status&)> complete;  // called once
  Deadline deadline = Deadline::Never();        // set by Post (now + HOOP_TIMEOUT) unless done at once or set before
  // Where a caller that waits on its own thread keeps the result (CommCore::SendNow):
  // `complete` then only writes these, and needs no state of its own.
  bool done = false;
  Status status;
  // Its peer (every peer, for any source) is asked to hold early messages until it completes
  // (Mailbox::AskHold): by Post where `ask_at_post`, else by whoever waits on it, once it must
  // wait (a blocking call, which often is done before that: no ask made and taken back).
  bool ask_at_post = true;
  bool asked = false;
  // A call on device memory staged through host memory (p2p_device.cc): the host copy, held
  // until the call completes, and for a receive the copy back, run once it succeeded and before
  // `complete` (its failure is the call's).
  std::shared_ptr<std::vector<char>> staged;
  std::function<Status()> after;
  // Device memory the transport moves itself (CUDA IPC, transport/device_queue.h): `data` is
  // never read or written here but through this queue. Its sends always go by rendezvous, so the
  // payload travels from `data` straight into the receive's memory.
  DeviceQueue* queue = nullptr;
};

// A Leftover (shared_transport.h) once retired: a freed communicator's mailbox stays with the hub
// until every peer has said goodbye.
class Mailbox : public Leftover {
 public:
  struct Options {
    int rank = 0;
    int size = 1;
    size_t unexpected_bytes = 64u << 20;  // HOOP_UNEXPECTED_BYTES
    size_t piece_bytes = 512 * 1024;      // payload pieces this rank sends
    std::chrono::milliseconds timeout{300000};
    std::string timeout_name = "HOOP_TIMEOUT";  // what set it, as its errors say
  };
  Mailbox(Transport& t, Options o);
  ~Mailbox() override;
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;

  // Posts the first frame receive from every peer; once, before any traffic.
  Status Start();
  // Starts a send or a receive (checked by the caller); `call->complete` runs when it is done.
  void Post(std::shared_ptr<P2pCall> call);
  // Sends `bytes` at `data` to another rank at once, with credit to spare and nothing waiting
  // ahead to that peer: inside its frame if they fit (kInlineBytes), else as its eager frame and
  // one payload piece copied out together where the back end can (Endpoint::SendCopies): true,
  // and the send is done. False: nothing happened (Post it). Checked by the caller.
  bool SendSmall(int peer, int tag, const void* data, uint64_t bytes, DType dtype);
  size_t piece_bytes() const { return o_.piece_bytes; }
  // While a posted call with a peer is open, that peer's link holds messages which come before
  // their receive instead of stalling on them (Endpoint::AskHold): what the call waits for (its
  // frame, a CTS, a payload sent on a CTS, credit) may have left the peer behind a collective's
  // message this rank has not reached yet, as when the caller waits on it before that
  // collective (MPI's progress rule makes such a program correct). Asked once per peer however
  // many calls are open; `on` false takes the call's ask back. A call asks once (P2pCall::asked), and
  // a complete one never.
  void AskHold(P2pCall& call, bool on);
  // A completion whose op id carries kP2pBit.
  void Handle(const Completion& c) override;
  // Polls the transport until something completes or `deadline` (no collective running);
  // false if nothing came by the deadline.
  bool Progress(Deadline deadline, SpinGate gate = {});
  // Takes the next frame from `peer` where it lies, on this thread and without a poll, if it
  // comes within `spins` looks (Endpoint::TakeNow; no collective running): a blocking receive's
  // message, handed over without the transport's Poll and the hub's routing. False if it did not
  // come, or the back end has no such path.
  bool TakeFrame(int peer, unsigned spins);
  // A blocking receive from `peer` (checked, no collective running), before it is posted: takes
  // the peer's next frame as TakeFrame does and, when it carries a message for this receive
  // inside it (at most kInlineBytes, of `dtype`, within `capacity` bytes) and no receive posted
  // or message held comes first, delivers it into `data` and `info` (may be null) at once:
  // kMine, the receive is done. kOther: another frame came; post the receive, then hand the
  // frame to HandleTaken at once (a larger message's payload then goes straight into the
  // receive). kNothing: none came within `spins` looks, or it could not look.
  enum class Taken { kNothing, kOther, kMine };
  Taken TakeInline(int peer, int tag, void* data, uint64_t capacity, DType dtype, RecvInfo* info, unsigned spins);
  // Handles the frame TakeInline took (kOther) as the poll would have, and takes a payload of one
  // piece posted for it where it lies, as TakeFrame does.
  void HandleTaken(int peer, unsigned spins);
  // Fails the calls past their deadline that the transport holds nothing of; one that it does
  // (a payload half sent or received) makes fatal() non-OK instead.
  void Expire();
  // Calls posted and not complete, or frames not yet taken by the transport (a small send
  // completes at once, its copy inside a frame that must still be written out): someone must
  // go on polling.
  bool Busy() const { return live_ > 0 || (FramesOut() && fatal_.ok() && !closed_); }
  bool FramesOut() const { return frames_out_ > 0; }
  // A payload that stopped moving, or memory that could not be had: the communicator cannot go
  // on. (A lost peer fails only the calls that need it.)
  const Status& fatal() const { return fatal_; }
  // Completes every pending call with `why`; the mailbox takes nothing more after it.
  void FailAll(const Status& why);
  // The transport holds memory of a call: a payload is being sent or received.
  bool Moving() const;
  // After FailAll, its communicator freed while others go on over the same connections: says
  // goodbye to every peer (a frame after all this rank sent it, preceded by a NACK for each
  // rendezvous FailAll gave up, so the peer knows which of its CTS'd receives get no data) and
  // from then on only answers (a late CTS gets its NACK and zeros) and reposts frame receives,
  // until Done(): every peer has said goodbye or is gone, and every frame and payload this rank
  // sent is out.
  void Retire();
  bool Done() const override;

 private:
  struct Frame;
  struct Arrival;
  struct Send;
  struct PeerState;
  enum class Kind : uint64_t { kFrameIn = 0, kFrameOut, kDataOut, kDataIn };

  static uint64_t OpId(Kind k, uint64_t id) { return kP2pBit | (static_cast<uint64_t>(k) << 56) | id; }
  uint64_t FrameMatch(uint64_t n) const;
  uint64_t DataMatch(uint64_t msg, uint64_t piece) const;

  void PostSend(std::shared_ptr<P2pCall> call);
  void PostRecv(std::shared_ptr<P2pCall> call);
  // Whether a message held unexpected matches `recv` (PostRecv would take it).
  bool HeldFor(const P2pCall& recv) const;
  void SendToSelf(std::shared_ptr<P2pCall> call);
  void Launch(int peer);               // starts the waiting sends to `peer` that credit allows
  void SendFrame(int peer, Frame& f);  // fills in f.credit
  StatusOr<uint64_t> FrameSlot();
  void PostFrameRecv(int peer);
  void PostPayload(Send& s);
  // The frame announcing message `msg` (eager or RTS), with this rank's piece size.
  Frame MessageFrame(uint32_t kind, int tag, DType dtype, uint64_t bytes, uint64_t msg) const;
  // Sends message `msg` (at most kInlineBytes) inside an eager frame, spending credit.
  void SendInline(int peer, int tag, DType dtype, const void* data, uint64_t msg, uint64_t bytes);
  // A message inside its frame handed straight to a posted receive that matches it; false if
  // none does (it then arrives as any other).
  bool DeliverInline(int peer, const Frame& f);
  // Copies a message held here (`from`: host memory, or a send to self's device memory with its
  // queue) into a receive's memory: memcpy between host memory, else on a device queue, waited for.
  Status Deliver(P2pCall& to, const void* from, DeviceQueue* from_queue, uint64_t bytes) const;
  // Why `call` cannot take a message of `bytes` in `dtype` from `peer`; OK if it can.
  Status Refusal(const P2pCall& call, int peer, uint64_t bytes, DType dtype) const;
  // The frame from `peer` has landed in its receive, which the back end posted again for the
  // next frame (`posted_again`, TakeFrame) or completed (the poll's).
  void FrameIn(int peer, bool posted_again);
  Frame Landed(int peer) const;  // a copy of `peer`'s next frame, from its landing slot
  // Where `peer`'s frame number `n` lands in in_frames_: two slots per peer, taken in turn, so
  // the receive for frame n+1 may be posted (TakeNow's `then`) while frame n is still read.
  size_t LandingAt(int peer, uint64_t n) const;
  void TakeCredit(int peer, uint64_t credit);  // credit a frame returned, and the sends it frees
  // TakeFrame's first half: the frame into its receive (posted again for the next); HandleTaken
  // is the second.
  bool TakeNextFrame(int peer, unsigned spins);
  void OnFrame(int peer, const Frame& f);
  void OnNack(int peer, const Frame& f);
  // A message has come (its frame, or a send to self): to the first posted receive it matches,
  // else to the unexpected list.
  void Arrive(std::unique_ptr<Arrival> a);
  // Pairs a receive with a message.
  void Match(std::shared_ptr<P2pCall> call, uint64_t arrival);
  void ReceivePayload(Arrival& a, char* dest, bool one_piece_buffer);  // posts the pieces
  void Finish(uint64_t arrival);  // the payload is in: deliver once matched, return credit
  void ReturnCredit(int peer, uint64_t bytes);
  void Complete(const std::shared_ptr<P2pCall>& call, const Status& s);
  // `bye`: the peer freed the communicator (its goodbye frame), its connection lives on.
  void LosePeer(int peer, const Status& why, bool bye = false);
  void DropArrival(uint64_t arrival, const Status& why);  // its payload will not land: the receive fails
  std::string Describe(const P2pCall& c) const;

  Transport& t_;
  const Options o_;
  const uint64_t credit_;  // per peer
  std::vector<std::unique_ptr<PeerState>> peers_;
  std::unique_ptr<char[]> in_mem_;  // two landing frames per peer (LandingAt)
  Region in_frames_;
  std::vector<std::unique_ptr<char[]>> frame_blocks_;  // frames being sent
  std::vector<Region> frame_regions_;
  std::vector<uint64_t> free_frames_;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Send>> sends_;  // by id: posted, not complete
  std::map<std::pair<int, uint64_t>, uint64_t> awaiting_cts_;  // (peer, msg) -> send id
  std::vector<std::pair<int, uint64_t>> abandoned_;  // (peer, msg): rendezvous FailAll gave up, for Retire's NACKs
  std::unordered_map<uint64_t, std::unique_ptr<Arrival>> arrivals_;  // by id: messages not delivered
  std::map<std::pair<int, uint64_t>, uint64_t> rndv_by_msg_;         // (peer, msg) -> arrival id
  std::list<uint64_t> unexpected_;                                   // arrivals no receive matched yet, in order
  std::deque<std::shared_ptr<P2pCall>> posted_;                      // receives no message matched yet, in order
  uint64_t self_msg_ = 0;
  uint64_t self_held_ = 0;  // bytes of sends to self held unreceived
  size_t live_ = 0;
  Status fatal_;
  bool closed_ = false;
  bool retiring_ = false;
  size_t frames_out_ = 0;  // frame sends not yet complete
  std::vector<Completion> done_;
  Deadline::Clock::time_point next_expire_{};
  unsigned turns_ = 0;  // Progress calls, to space out the clock reads
  // The last payload of one piece whose receive was posted (TakeFrame takes it after its frame).
  struct OnePiece {
    int peer = -1;
    uint64_t msg = 0;
    uint64_t arrival = 0;
  } one_piece_;
};

}  // namespace hoop
