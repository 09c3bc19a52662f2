// TransportHub and its views: see shared_transport.h.
#include "transport/shared_transport.h"

#include <algorithm>

#include "transport/peer_watch.h"

namespace hoop {

namespace {
constexpr uint64_t kViewOpMask = uint64_t{0xff} << kViewOpShift;
constexpr auto kTurn = std::chrono::milliseconds(1);  // the longest poll while other views are open
}  // namespace

struct TransportHub::Slot {
  std::vector<int> members;            // view rank -> back end rank
  std::vector<int> rank_of;            // back end rank -> view rank (-1: not a member)
  std::vector<Completion> ready;       // polled by another view's thread, not yet handed over
  std::unique_ptr<Transport> retired;  // a freed communicator's view, kept for `left`
  std::unique_ptr<Leftover> left;
};

class TransportHub::Lock {
 public:
  explicit Lock(TransportHub& h) : h_(h) { h_.Enter(); }
  ~Lock() { h_.Leave(); }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  TransportHub& h_;
};

void TransportHub::Enter() {
  const auto me = std::this_thread::get_id();
  if (owner_.load(std::memory_order_relaxed) == me) {
    ++depth_;
    return;
  }
  const uint32_t ticket = next_.fetch_add(1, std::memory_order_relaxed);
  for (int spins = 0;; ++spins) {
    const uint32_t now = serving_.load(std::memory_order_acquire);
    if (now == ticket) break;
    if (spins < 64) continue;
    serving_.wait(now, std::memory_order_acquire);
  }
  owner_.store(me, std::memory_order_relaxed);
  depth_ = 1;
}

void TransportHub::Leave() {
  if (--depth_ > 0) return;
  owner_.store(std::thread::id(), std::memory_order_relaxed);
  // Only the holder moves serving_: a plain store hands over, no locked instruction.
  const uint32_t now = serving_.load(std::memory_order_relaxed) + 1;
  serving_.store(now, std::memory_order_release);
  if (next_.load(std::memory_order_relaxed) != now) serving_.notify_all();
}

// ---- a view ----

// Its fast paths are the base's, tags and op ids stamped, where the base has them.
class ViewEndpoint : public Endpoint, public EndpointFastPath {
 public:
  ViewEndpoint(TransportHub* hub, int id, int peer, Endpoint* base) : hub_(hub), id_(id), peer_(peer), base_(base) {
    if (base->fast()) set_fast(this);
  }
  int peer() const override { return peer_; }
  int64_t Retransmits() const override { return base_->Retransmits(); }
  void PostSend(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) override;
  void PostRecv(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) override;
  bool PostRecvTo(RecvSink* sink, size_t len, size_t elem, Tag tag, uint64_t op_id) override;
  bool SendCopies(const CopyMsg* msgs, size_t n) override;
  bool TakeNow(Tag tag, uint64_t op_id, unsigned spins, const NextRecv* then) override;
  bool Withdraw(uint64_t op_id) override;
  void AskHold(bool on, size_t cap, uint64_t spare) override {
    TransportHub::Lock l(*hub_);
    base_->AskHold(on, cap, spare);
  }

 private:
  friend class HubView;
  Tag Stamp(Tag t) const { return {t.match | (uint64_t(id_) << kViewMatchShift), t.check}; }
  uint64_t Stamp(uint64_t op) const { return op | (uint64_t(id_) << kViewOpShift); }
  bool Refused(uint64_t op_id, bool is_send);  // holds the lock
  TransportHub* hub_;
  int id_, peer_;
  Endpoint* base_;
};

class HubView : public Transport {
 public:
  HubView(std::shared_ptr<TransportHub> hub, int id, const std::vector<int>& members, int self)
      : keep_(std::move(hub)), hub_(keep_.get()), id_(id) {
    for (size_t r = 0; r < members.size(); ++r) {
      Endpoint* ep = static_cast<int>(r) == self ? nullptr : hub_->base_->endpoint(members[r]);
      eps_.push_back(ep ? std::make_unique<ViewEndpoint>(hub_, id, static_cast<int>(r), ep) : nullptr);
    }
  }
  ~HubView() override {
    if (keep_) hub_->Close(id_);  // a retired view's slot goes with its leftover instead
  }
  std::string Name() const override { return hub_->base_->Name(); }
  std::string Label() const override { return hub_->base_->Label(); }
  bool CanConnect(const PeerInfo& self, const PeerInfo& peer) const override {
    return hub_->base_->CanConnect(self, peer);
  }
  std::string Address() const override { return hub_->base_->Address(); }
  Status Connect(int, const std::string&, Deadline) override {
    return FailedPrecondition("a communicator made by a split uses its parent's connections");
  }
  StatusOr<Region> Register(void* ptr, size_t bytes, MemKind kind) override {
    TransportHub::Lock l(*hub_);
    return hub_->base_->Register(ptr, bytes, kind);
  }
  StatusOr<Region> RegisterStaging(void* ptr, size_t bytes, MemKind kind) override {
    TransportHub::Lock l(*hub_);
    return hub_->base_->RegisterStaging(ptr, bytes, kind);
  }
  Endpoint* endpoint(int peer) override {
    return peer >= 0 && static_cast<size_t>(peer) < eps_.size() ? eps_[static_cast<size_t>(peer)].get() : nullptr;
  }
  Status Poll(std::vector<Completion>* out, Deadline deadline, SpinGate gate = {}) override;
  Status Failure() override {
    TransportHub::Lock l(*hub_);
    return hub_->failed_;
  }
  void Abort(const std::string& cause) override {
    TransportHub::Lock l(*hub_);
    hub_->Fail(LocalAbort(cause), cause, true);
  }
  // Only the last view closes the connections; while others are open they go on over them.
  Status Close(Deadline deadline) override {
    TransportHub::Lock l(*hub_);
    if (hub_->open_ != 1) return Status::Ok();
    return hub_->base_->Close(deadline);
  }
  size_t PreferredChunkBytes() const override { return hub_->base_->PreferredChunkBytes(); }
  bool StageLargeCopies() const override { return hub_->base_->StageLargeCopies(); }
  // The queue is the base's, shared by every view (it locks itself, collectives/device/cuda_queue.h).
  DeviceQueue* DeviceQueueFor(int device) override {
    TransportHub::Lock l(*hub_);
    return hub_->base_->DeviceQueueFor(device);
  }

  void Release() { keep_.reset(); }  // retired: the hub owns this view now
  size_t id() const { return static_cast<size_t>(id_); }

 private:
  std::shared_ptr<TransportHub> keep_;  // null once retired (no cycle through the hub)
  TransportHub* hub_;
  int id_;
  std::vector<std::unique_ptr<ViewEndpoint>> eps_;  // by view rank; null for this rank
};

// A post on a failed hub completes at once with the cause: the back end is closed.
bool ViewEndpoint::Refused(uint64_t op_id, bool is_send) {
  if (hub_->failed_.ok()) return false;
  hub_->slots_[static_cast<size_t>(id_)]->ready.push_back({op_id, peer_, is_send, hub_->failed_, 0});
  return true;
}

void ViewEndpoint::PostSend(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) {
  TransportHub::Lock l(*hub_);
  if (!Refused(op_id, true)) base_->PostSend(region, offset, len, Stamp(tag), Stamp(op_id));
}

void ViewEndpoint::PostRecv(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) {
  TransportHub::Lock l(*hub_);
  if (!Refused(op_id, false)) base_->PostRecv(region, offset, len, Stamp(tag), Stamp(op_id));
}

bool ViewEndpoint::PostRecvTo(RecvSink* sink, size_t len, size_t elem, Tag tag, uint64_t op_id) {
  TransportHub::Lock l(*hub_);
  if (!hub_->failed_.ok()) return false;  // the caller posts a PostRecv, which fails at once
  return base_->PostRecvTo(sink, len, elem, Stamp(tag), Stamp(op_id));
}

bool ViewEndpoint::SendCopies(const CopyMsg* msgs, size_t n) {
  constexpr size_t kMost = 4;  // the mailbox sends a frame and at most its payload
  if (n > kMost) return false;
  CopyMsg stamped[kMost];
  for (size_t i = 0; i < n; ++i) stamped[i] = {msgs[i].data, msgs[i].len, Stamp(msgs[i].tag)};
  TransportHub::Lock l(*hub_);
  return hub_->failed_.ok() && base_->SendCopies(stamped, n);  // failed: PostSend says why
}

// Holds the hub for the spin: a few microseconds at most, where a Poll holds it up to a turn.
bool ViewEndpoint::TakeNow(Tag tag, uint64_t op_id, unsigned spins, const NextRecv* then) {
  const NextRecv next = then ? NextRecv{Stamp(then->tag), then->data} : NextRecv{};
  TransportHub::Lock l(*hub_);
  return hub_->failed_.ok() && base_->TakeNow(Stamp(tag), Stamp(op_id), spins, then ? &next : nullptr);
}

bool ViewEndpoint::Withdraw(uint64_t op_id) {
  TransportHub::Lock l(*hub_);
  return base_->Withdraw(Stamp(op_id));
}

Status HubView::Poll(std::vector<Completion>* out, Deadline deadline, SpinGate gate) {
  const size_t start = out->size();
  while (true) {
    {
      TransportHub::Lock l(*hub_);
      auto& ready = hub_->slots_[static_cast<size_t>(id_)]->ready;
      if (!ready.empty()) {
        out->insert(out->end(), ready.begin(), ready.end());
        ready.clear();
        return Status::Ok();
      }
      if (!hub_->failed_.ok()) return hub_->failed_;
      Deadline turn = deadline;
      if (hub_->open_ > 1) {
        Deadline soon = Deadline::After(kTurn);
        if (soon.at() < deadline.at()) turn = soon;
      }
      Status s = hub_->PollFor(id_, out, turn, gate);
      if (out->size() > start) return Status::Ok();
      if (!hub_->failed_.ok()) return hub_->failed_;
      if (!s.ok() && s.code() != Code::kDeadlineExceeded) return s;
    }
    if (deadline.Expired()) return DeadlineExceeded("no progress before the deadline");
  }
}

// ---- the hub ----

std::shared_ptr<TransportHub> TransportHub::Make(std::unique_ptr<Transport> base, size_t hold_cap) {
  return std::shared_ptr<TransportHub>(new TransportHub(std::move(base), hold_cap));
}

TransportHub::TransportHub(std::unique_ptr<Transport> base, size_t hold_cap)
    : base_(std::move(base)), hold_cap_(hold_cap) {
  slots_.resize(kMaxViews);
}

TransportHub::~TransportHub() {
  // Leftovers post through their views: each goes before its view, all before the back end.
  for (auto& s : slots_)
    if (s) {
      s->left.reset();
      s->retired.reset();
    }
}

StatusOr<std::unique_ptr<Transport>> TransportHub::View(int id, std::vector<int> members, int self) {
  Lock l(*this);
  Reap();
  if (id < 0 || id >= kMaxViews || slots_[static_cast<size_t>(id)])
    return Internal("communicator id " + std::to_string(id) + " is in use on this rank");
  int top = -1;
  auto slot = std::make_unique<Slot>();
  slot->members = members;
  for (int m : members) top = std::max(top, m);
  slot->rank_of.assign(static_cast<size_t>(top + 1), -1);
  for (size_t r = 0; r < members.size(); ++r) slot->rank_of[static_cast<size_t>(members[r])] = static_cast<int>(r);
  slots_[static_cast<size_t>(id)] = std::move(slot);
  ++open_;
  if (open_ > 1 && !holding_) {
    holding_ = true;
    base_->HoldEarly(hold_cap_);
  }
  return std::unique_ptr<Transport>(new HubView(shared_from_this(), id, members, self));
}

std::array<uint64_t, kMaxViews / 64> TransportHub::InUse() {
  Lock l(*this);
  Reap();
  std::array<uint64_t, kMaxViews / 64> bits{};
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i]) bits[i / 64] |= uint64_t{1} << (i % 64);
  return bits;
}

std::vector<int> TransportHub::Lost() {
  std::lock_guard<std::mutex> lock(lost_mu_);
  return lost_;
}

int TransportHub::open_views() {
  Lock l(*this);
  return open_;
}

void TransportHub::Retire(std::unique_ptr<Transport> view, std::unique_ptr<Leftover> left) {
  Lock l(*this);
  auto* v = static_cast<HubView*>(view.get());
  Slot& s = *slots_[static_cast<size_t>(v->id())];
  v->Release();  // the caller still holds the hub
  --open_;
  if (!failed_.ok()) return;                            // nothing more moves: the view and its leftover just go
  for (const Completion& c : s.ready) left->Handle(c);  // polled for it by another thread
  s.ready.clear();
  s.retired = std::move(view);
  s.left = std::move(left);
  ++leftovers_;
  Reap();
}

void TransportHub::Close(int id) {
  Lock l(*this);
  auto& s = slots_[static_cast<size_t>(id)];
  if (s && !s->retired) {
    s.reset();
    --open_;
  }
}

Status TransportHub::PollFor(int me, std::vector<Completion>* out, Deadline deadline, SpinGate gate) {
  scratch_.clear();
  Status s = base_->Poll(&scratch_, deadline, gate);
  std::vector<Completion> got;
  got.swap(scratch_);  // a leftover's Handle may post, never poll; still, keep scratch_ free
  for (Completion& c : got) Route(std::move(c), me, out);
  got.clear();
  if (scratch_.capacity() < got.capacity()) scratch_.swap(got);
  Reap();
  return s;
}

void TransportHub::Route(Completion c, int me, std::vector<Completion>* out) {
  const int id = static_cast<int>((c.op_id & kViewOpMask) >> kViewOpShift);
  c.op_id &= ~kViewOpMask;
  // A peer gave up, or revoked a communicator over these connections: every view fails.
  if ((c.status.code() == Code::kAborted || c.status.code() == Code::kRevoked) && failed_.ok()) failed_ = c.status;
  if (c.status.code() == Code::kUnavailable && c.peer >= 0) {
    std::lock_guard<std::mutex> lock(lost_mu_);
    if (std::find(lost_.begin(), lost_.end(), c.peer) == lost_.end()) lost_.push_back(c.peer);
  }
  Slot* s = slots_[static_cast<size_t>(id)].get();
  if (!s) return;  // a view long gone
  if (c.peer >= 0 && static_cast<size_t>(c.peer) < s->rank_of.size()) c.peer = s->rank_of[static_cast<size_t>(c.peer)];
  if (s->left)
    s->left->Handle(c);
  else if (id == me)
    out->push_back(std::move(c));
  else
    s->ready.push_back(std::move(c));
}

void TransportHub::Fail(const Status& why, const std::string& cause, bool tell_peers) {
  if (failed_.ok()) failed_ = why;
  if (tell_peers && !aborted_) {
    aborted_ = true;
    base_->Abort(cause);
  }
}

void TransportHub::Reap() {
  if (leftovers_ == 0) return;  // the common case, on every poll
  for (auto& s : slots_) {
    if (!s || !s->left || !s->left->Done()) continue;
    --leftovers_;
    std::unique_ptr<Slot> gone = std::move(s);
    gone->left.reset();
    gone->retired.reset();
  }
}

}  // namespace hoop
