// Several communicators over one set of connections: a split or a duplicate of a communicator
// (hoop_comm_split, hoop_comm_dup) opens no sockets or segments of its own; it talks over its
// parent's, through a view.
//
// A TransportHub owns the back end (one Transport: a single back end or a MultiTransport) and
// hands out views, one per communicator, each a Transport of its own:
//  - ranks: a view's rank r is the back end's rank members[r];
//  - tags: a view stamps its 8-bit id into bits 55-62 of every match word (the collectives and
//    the mailbox leave them clear), so each communicator has its own tag space on every link;
//  - op ids: likewise in bits 48-55 of every op id, and a completion goes to the view whose id it
//    carries, with the id taken off again and the peer given as the view's rank.
// The back end is single-threaded (transport.h); the hub lets one thread in at a time, in the
// order they came (a ticket lock, re-entered by the thread that holds it). A view's Poll polls
// the back end for everyone and keeps what belongs to the other views for them; while more than
// one view is open it polls in turns of at most a millisecond, so another communicator's thread
// can post and poll in between. So a view's posted receive may be filled by another thread's
// poll at any moment, even while its own thread still reads what the last one brought: a
// receive kept posted by Endpoint::TakeNow lands in other memory than the one just taken.
//
// Failure is shared: a view's Abort (its communicator failed) aborts the back end, telling every
// peer, and a peer's abort notice (an Aborted completion) fails every view; each view's Poll
// then returns the cause. A peer that merely went away fails only the operations that needed it.
//
// Each communicator orders its own collectives, and ranks may run two communicators' in different
// orders (a fusion thread beside the main one, two PyTorch process groups): once a second view
// opens, the back end holds a message that comes before its receive (up to `hold_cap` bytes per
// peer, HOOP_UNEXPECTED_BYTES) rather than stalling the link with it (Transport::HoldEarly), so
// one communicator's early message never holds up another's behind it.
//
// A communicator freed while others go on hands its view and its leftover traffic (Leftover:
// the mailbox, still answering its peers until each has said goodbye) to the hub, which keeps
// the id out of use until the leftover is done, so a later communicator with that id never
// meets an earlier one's messages.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "transport/transport.h"

namespace hoop {

inline constexpr int kMaxViews = 256;  // ids 0..255; 0 is the communicator the connections were made for
inline constexpr int kViewMatchShift = 55;
inline constexpr int kViewOpShift = 48;

// The traffic a freed communicator still owes its peers.
class Leftover {
 public:
  virtual ~Leftover() = default;
  virtual void Handle(const Completion& c) = 0;  // a completion of its view
  virtual bool Done() const = 0;                 // nothing more can arrive for it
};

class TransportHub : public std::enable_shared_from_this<TransportHub> {
 public:
  static std::shared_ptr<TransportHub> Make(std::unique_ptr<Transport> base, size_t hold_cap = 64u << 20);
  ~TransportHub();

  // A view with `id` (not in use: see InUse) whose rank r is the back end's rank members[r];
  // this rank is the view's rank `self`.
  StatusOr<std::unique_ptr<Transport>> View(int id, std::vector<int> members, int self);
  // The ids open or still held by a leftover, as a bitmap (bit i of word i/64).
  std::array<uint64_t, kMaxViews / 64> InUse();
  // Takes a closing view (one of this hub's) and what it still owes; both are dropped once
  // `left` is done. The caller holds a reference to the hub across the call.
  void Retire(std::unique_ptr<Transport> view, std::unique_ptr<Leftover> left);
  // How many views are open (not retired).
  int open_views();
  // The back end's ranks some view has seen lost so far (a completion failed as Unavailable).
  std::vector<int> Lost();

 private:
  friend class HubView;
  friend class ViewEndpoint;
  class Lock;
  struct Slot;
  TransportHub(std::unique_ptr<Transport> base, size_t hold_cap);
  void Enter();
  void Leave();
  // Polls the back end once until `deadline`, routing what comes to the views; `me`'s own go to
  // `out`. Holds the lock.
  Status PollFor(int me, std::vector<Completion>* out, Deadline deadline, SpinGate gate);
  void Route(Completion c, int me, std::vector<Completion>* out);
  // The views fail with `why`; the peers are told `cause` (an abort notice, RevokeNotice's too).
  void Fail(const Status& why, const std::string& cause, bool tell_peers);
  void Close(int id);  // a view is destroyed (not retired)
  void Reap();         // drops leftovers that are done

  std::unique_ptr<Transport> base_;
  std::atomic<uint32_t> next_{0}, serving_{0};
  std::atomic<std::thread::id> owner_{};
  int depth_ = 0;
  std::vector<std::unique_ptr<Slot>> slots_;  // by id
  int open_ = 0;
  int leftovers_ = 0;  // retired slots still held
  size_t hold_cap_;
  bool holding_ = false;  // the back end holds early messages (a second view opened)
  Status failed_;
  bool aborted_ = false;
  std::mutex lost_mu_;     // Lost() is asked from threads that do not hold the hub
  std::vector<int> lost_;  // back end ranks, each once
  std::vector<Completion> scratch_;
};

}  // namespace hoop
