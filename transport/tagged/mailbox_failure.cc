// The mailbox's failures (mailbox.h): calls past their deadline, a lost peer, and shutdown.
// What may fail quietly and what must poison the communicator turns on one question: does the
// transport still hold the caller's memory?
#include <sstream>
#include <string>
#include <vector>

#include "transport/tagged/mailbox_internal.h"

namespace hoop {

namespace {
std::string Seconds(std::chrono::milliseconds t) {
  std::ostringstream os;
  os << static_cast<double>(t.count()) / 1000.0 << " s";
  return os.str();
}
}  // namespace

void Mailbox::LosePeer(int peer, const Status& why, bool bye) {
  PeerState& ps = *peers_[static_cast<size_t>(peer)];
  if (!ps.lost.ok()) return;
  ps.lost = Status(why.code(), "rank " + std::to_string(peer) + ": " + why.message());
  // Its frame receive is always posted, so a peer's exit always shows, also when it just ended
  // its job: only the calls that needed it fail (the transport has given back their memory);
  // messages it sent in full stay receivable. A collective that needs it fails on its own.
  // After a goodbye the connection lives on: a payload whose receive is posted still lands (the
  // peer said goodbye after all it sent was out, and answers a late CTS with a NACK and zeros),
  // and the transport writes into its memory meanwhile, so that arrival stays and finishes as
  // usual; its completion failing later fails it (Handle). Its frame may be read before its
  // payload's completion: failing it then lost a message whose send had succeeded. A rendezvous
  // the peer gave up has its NACK read before the goodbye, and fails when the zeros land.
  // Completed once both tables are walked: a completion's callback may post a send or receive,
  // which would move what the loops walk (a rehash, a deque's growth).
  std::vector<std::shared_ptr<P2pCall>> failed;
  for (auto it = sends_.begin(); it != sends_.end();) {
    if (it->second->peer != peer) {
      ++it;
      continue;
    }
    awaiting_cts_.erase({peer, it->second->msg});
    if (it->second->call) failed.push_back(std::move(it->second->call));
    it = sends_.erase(it);
  }
  ps.waiting.clear();
  for (auto it = posted_.begin(); it != posted_.end();) {
    if ((*it)->peer != peer) {
      ++it;
      continue;
    }
    failed.push_back(std::move(*it));
    it = posted_.erase(it);
  }
  for (auto& call : failed) Complete(call, Status(ps.lost.code(), Describe(*call) + ": lost " + ps.lost.message()));
  std::vector<uint64_t> drop;  // by id: a completion's callback may post, and so add arrivals
  for (const auto& [id, a] : arrivals_)
    if (a->peer == peer && !a->landed && !(bye && a->posted)) drop.push_back(id);
  const Status lost(ps.lost.code(), "lost " + ps.lost.message());
  for (uint64_t id : drop) DropArrival(id, lost);
}

void Mailbox::DropArrival(uint64_t id, const Status& why) {
  auto it = arrivals_.find(id);
  if (it == arrivals_.end()) return;
  Arrival& a = *it->second;
  unexpected_.remove(id);
  if (a.rndv) rndv_by_msg_.erase({a.peer, a.msg});
  auto call = std::move(a.call);
  arrivals_.erase(it);
  if (call) Complete(call, Status(why.code(), Describe(*call) + ": " + why.message()));
}

void Mailbox::Expire() {
  if (live_ == 0) return;
  const auto now = Deadline::Clock::now();
  auto late = [&](const P2pCall& c) { return c.deadline.at() <= now; };
  const auto limit = [&] { return Seconds(o_.timeout) + " (" + o_.timeout_name + ")"; };
  // Completed after the walks, as in LosePeer: a callback may post.
  std::vector<std::pair<std::shared_ptr<P2pCall>, Status>> expired;
  for (auto it = posted_.begin(); it != posted_.end();) {
    if (!late(**it)) {
      ++it;
      continue;
    }
    Status why = DeadlineExceeded(Describe(**it) + ": no matching message came within " + limit());
    expired.emplace_back(std::move(*it), std::move(why));
    it = posted_.erase(it);
  }
  for (auto it = sends_.begin(); it != sends_.end();) {
    Send& s = *it->second;
    if (!s.call || !late(*s.call)) {
      ++it;
      continue;
    }
    const std::string who = Describe(*s.call);
    if (s.state == Send::kSending) {  // the transport reads the caller's memory still
      if (fatal_.ok())
        fatal_ = DeadlineExceeded(who + ": its payload stopped moving for " + limit() + "; rank " +
                                  std::to_string(s.peer) + " stopped reading");
      ++it;
      continue;
    }
    Status why = s.state == Send::kWaiting
                     ? DeadlineExceeded(who + ": rank " + std::to_string(s.peer) +
                                        " held this rank's unreceived messages "
                                        "up to HOOP_UNEXPECTED_BYTES / (ranks - 1) = " +
                                        std::to_string(credit_) + " bytes and received none of them within " + limit())
                     : DeadlineExceeded(who + ": rank " + std::to_string(s.peer) +
                                        " posted no matching receive within " + limit());
    if (s.state == Send::kAwaitingCts) awaiting_cts_.erase({s.peer, s.msg});
    expired.emplace_back(std::move(s.call), std::move(why));
    it = sends_.erase(it);
  }
  for (auto& [id, a] : arrivals_) {
    if (a->call && a->posted && !a->landed && late(*a->call) && fatal_.ok())
      fatal_ = DeadlineExceeded(Describe(*a->call) + ": its payload stopped moving for " + limit() + "; rank " +
                                std::to_string(a->peer) + " stopped sending");
  }
  for (auto& [call, why] : expired) Complete(call, why);
}

void Mailbox::FailAll(const Status& why) {
  closed_ = true;
  std::vector<std::shared_ptr<P2pCall>> calls;
  for (auto& c : posted_) calls.push_back(std::move(c));
  posted_.clear();
  for (auto& [id, s] : sends_) {
    if (s->state == Send::kAwaitingCts) abandoned_.emplace_back(s->peer, s->msg);
    if (s->call) calls.push_back(std::move(s->call));
  }
  sends_.clear();
  awaiting_cts_.clear();
  for (auto& [id, a] : arrivals_) {
    if (a->call) calls.push_back(std::move(a->call));
    if (a->self_send) calls.push_back(std::move(a->self_send));
  }
  arrivals_.clear();
  unexpected_.clear();
  rndv_by_msg_.clear();
  for (auto& c : calls) Complete(c, Status(why.code(), Describe(*c) + ": " + why.message()));
}

bool Mailbox::Moving() const {
  for (const auto& [id, s] : sends_)
    if (s->state == Send::kSending) return true;
  for (const auto& [id, a] : arrivals_)
    if (a->posted && !a->landed) return true;
  return false;
}

void Mailbox::Retire() {
  retiring_ = true;
  for (const auto& [peer, msg] : abandoned_) {
    const PeerState& ps = *peers_[static_cast<size_t>(peer)];
    if (!ps.lost.ok()) continue;
    Frame nack;
    nack.kind = kNack;
    nack.msg = msg;
    nack.tag = kNackFreed;
    SendFrame(peer, nack);
  }
  abandoned_.clear();
  for (int p = 0; p < o_.size; ++p) {
    const PeerState& ps = *peers_[static_cast<size_t>(p)];
    if (p == o_.rank || (!ps.lost.ok() && !ps.bye)) continue;  // gone; one that said goodbye first waits for ours
    Frame bye;
    bye.kind = kBye;
    SendFrame(p, bye);
  }
}

bool Mailbox::Done() const {
  if (frames_out_ > 0 || !sends_.empty()) return false;  // a frame, or a NACK's zero payload, still going
  for (int p = 0; p < o_.size; ++p) {
    const PeerState& ps = *peers_[static_cast<size_t>(p)];
    if (p != o_.rank && !ps.bye && ps.lost.ok()) return false;
  }
  return true;
}

}  // namespace hoop
