// Mailbox::TakeInline on a real pair of shared-memory segments in one process: a blocking
// receive takes a message that rides inside its frame at once, with no post and no completion,
// and only when it is the one that receive must get: a receive posted ahead, or a message held
// from before, comes first; a larger message's frame is handed over once the receive is posted,
// its payload taken straight into it; another tag, another dtype or a message too long for it is
// handled the ordinary way (held, then matched and refused as any other).
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "tests/support/shm_pair.h"
#include "transport/tagged/mailbox.h"

using namespace hoop;

namespace {
Mailbox::Options Box(int rank) {
  Mailbox::Options o;
  o.rank = rank;
  o.size = 2;
  return o;
}

std::shared_ptr<P2pCall> Receive(void* data, size_t count, DType dtype, int peer, int tag) {
  auto c = std::make_shared<P2pCall>();
  c->peer = peer;
  c->tag = tag;
  c->data = data;
  c->count = count;
  c->dtype = dtype;
  P2pCall* raw = c.get();
  c->complete = [raw](const Status& s) {
    raw->status = s;
    raw->done = true;
  };
  return c;
}

// Polls until `call` is done, five seconds at most.
bool Await(Mailbox& m, const P2pCall& call) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!call.done && std::chrono::steady_clock::now() < end)
    m.Progress(Deadline::After(std::chrono::milliseconds(10)));
  return call.done;
}

// Polls until something completes (a frame has come in), five seconds at most.
bool PollOnce(Mailbox& m) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < end)
    if (m.Progress(Deadline::After(std::chrono::milliseconds(10)))) return true;
  return false;
}
}  // namespace

TEST_CASE("shm: a blocking receive takes a message inside its frame at once, and only when it is the one to take",
          "[transport]") {
  auto pair = test::ConnectedShmPair("take-inline");
  Mailbox a(*pair[0], Box(0));  // sends
  Mailbox b(*pair[1], Box(1));  // receives
  REQUIRE(a.Start().ok());
  REQUIRE(b.Start().ok());
  constexpr unsigned kSpins = 1u << 22;
  using Taken = Mailbox::Taken;
  int32_t x = 111, y = 222, got = 0;
  RecvInfo info;

  SECTION("taken at once, info filled, nothing left pending") {
    REQUIRE(a.SendSmall(1, 5, &x, 4, DType::kI32));
    CHECK(b.TakeInline(0, 5, &got, 8, DType::kI32, &info, kSpins) == Taken::kMine);
    CHECK(got == 111);
    CHECK(info.source == 0);
    CHECK(info.tag == 5);
    CHECK(info.count == 1);
    CHECK_FALSE(b.Busy());
    CHECK(b.TakeInline(0, 5, &got, 8, DType::kI32, &info, 1000) == Taken::kNothing);  // nothing more came
    REQUIRE(a.SendSmall(1, 5, nullptr, 0, DType::kI32));                              // an empty one
    info = {};
    CHECK(b.TakeInline(0, 5, &got, 8, DType::kI32, &info, kSpins) == Taken::kMine);
    CHECK(info.count == 0);
  }

  SECTION("a receive posted ahead with the same peer and tag gets the first message") {
    int32_t first = 0;
    auto ahead = Receive(&first, 1, DType::kI32, 0, 15);
    b.Post(ahead);
    REQUIRE(a.SendSmall(1, 15, &x, 4, DType::kI32));
    REQUIRE(a.SendSmall(1, 15, &y, 4, DType::kI32));
    CHECK(b.TakeInline(0, 15, &got, 4, DType::kI32, nullptr, kSpins) == Taken::kNothing);  // not looked at
    REQUIRE(Await(b, *ahead));
    CHECK(ahead->status.ok());
    CHECK(first == 111);
    CHECK(b.TakeInline(0, 15, &got, 4, DType::kI32, nullptr, kSpins) == Taken::kMine);
    CHECK(got == 222);
  }

  SECTION("a message held from before gets taken first, by the ordinary post") {
    REQUIRE(a.SendSmall(1, 16, &x, 4, DType::kI32));
    REQUIRE(PollOnce(b));  // in, and held: nobody has asked for it
    REQUIRE(a.SendSmall(1, 16, &y, 4, DType::kI32));
    CHECK(b.TakeInline(0, 16, &got, 4, DType::kI32, nullptr, kSpins) == Taken::kNothing);
    auto r = Receive(&got, 1, DType::kI32, 0, 16);
    b.Post(r);
    REQUIRE(Await(b, *r));
    CHECK(got == 111);
  }

  SECTION("a larger message: its frame taken, the receive posted, its payload taken straight into it") {
    std::vector<char> out(1000), in(1000, 0);
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(i * 7);
    REQUIRE(a.SendSmall(1, 21, out.data(), out.size(), DType::kU8));
    CHECK(b.TakeInline(0, 21, in.data(), in.size(), DType::kU8, nullptr, kSpins) == Taken::kOther);
    auto r = Receive(in.data(), in.size(), DType::kU8, 0, 21);
    b.Post(r);
    b.HandleTaken(0, kSpins);
    REQUIRE(r->done);  // no poll needed: the payload was next on the stream
    CHECK(r->status.ok());
    CHECK(in == out);
  }

  SECTION("another tag, another dtype, or too long: handled as any message, then refused as any") {
    REQUIRE(a.SendSmall(1, 17, &x, 4, DType::kI32));
    CHECK(b.TakeInline(0, 18, &got, 4, DType::kI32, nullptr, kSpins) == Taken::kOther);
    b.HandleTaken(0, kSpins);  // no receive for it: held
    auto r17 = Receive(&got, 1, DType::kI32, 0, 17);
    b.Post(r17);  // held since: matched at once
    REQUIRE(r17->done);
    CHECK(r17->status.ok());
    CHECK(got == 111);

    const float f = 1.5f;
    REQUIRE(a.SendSmall(1, 19, &f, 4, DType::kF32));
    CHECK(b.TakeInline(0, 19, &got, 4, DType::kI32, nullptr, kSpins) == Taken::kOther);
    auto r19 = Receive(&got, 1, DType::kI32, 0, 19);
    b.Post(r19);
    b.HandleTaken(0, kSpins);
    REQUIRE(Await(b, *r19));
    CHECK(r19->status.code() == Code::kInvalidArgument);
    CHECK_THAT(r19->status.message(), Catch::Contains("f32") && Catch::Contains("i32"));

    const int32_t six[6] = {1, 2, 3, 4, 5, 6};
    int32_t five[5] = {};
    REQUIRE(a.SendSmall(1, 20, six, sizeof six, DType::kI32));
    CHECK(b.TakeInline(0, 20, five, sizeof five, DType::kI32, nullptr, kSpins) == Taken::kOther);
    auto r20 = Receive(five, 5, DType::kI32, 0, 20);
    b.Post(r20);
    b.HandleTaken(0, kSpins);
    REQUIRE(Await(b, *r20));
    CHECK(r20->status.code() == Code::kInvalidArgument);
    CHECK_THAT(r20->status.message(), Catch::Contains("24 bytes") && Catch::Contains("20 bytes"));
  }
}

namespace {
// A transport that hands every call to another; the two below change what they are about.
class Forwarding : public Transport {
 public:
  explicit Forwarding(Transport& base) : base_(base) {}
  std::string Name() const override { return base_.Name(); }
  bool CanConnect(const PeerInfo& s, const PeerInfo& p) const override { return base_.CanConnect(s, p); }
  std::string Address() const override { return base_.Address(); }
  Status Connect(int peer, const std::string& a, Deadline d) override { return base_.Connect(peer, a, d); }
  StatusOr<Region> Register(void* p, size_t n, MemKind k) override { return base_.Register(p, n, k); }
  Endpoint* endpoint(int peer) override { return base_.endpoint(peer); }
  Status Poll(std::vector<Completion>* out, Deadline deadline, SpinGate gate) override {
    return base_.Poll(out, deadline, gate);
  }
  void Abort(const std::string& cause) override { base_.Abort(cause); }

 protected:
  Transport& base_;
};

// The interleaving of two communicators' threads on one link (shared_transport.h), made certain:
// right after a TakeNow that leaves its receive posted for the next message, another thread's
// poll of the link lands whatever has come for it, before the taker reads what it took. The
// completions it gets are handed out by the next Poll, as the hub's routing would.
class PollAfterTake : public Forwarding {
 public:
  using Forwarding::Forwarding;
  Endpoint* endpoint(int peer) override {
    if (!ep_) ep_ = std::make_unique<Ep>(*this, base_.endpoint(peer));
    return ep_.get();
  }
  Status Poll(std::vector<Completion>* out, Deadline deadline, SpinGate gate) override {
    if (stash_.empty()) return base_.Poll(out, deadline, gate);
    out->insert(out->end(), stash_.begin(), stash_.end());
    stash_.clear();
    return Status::Ok();
  }
  int interleaved = 0;  // polls made between a take and its read that brought something

 private:
  class Ep : public Endpoint, public EndpointFastPath {
   public:
    Ep(PollAfterTake& t, Endpoint* base) : Endpoint(this), t_(t), b_(base) {}
    int peer() const override { return b_->peer(); }
    void PostSend(const Region& r, size_t o, size_t n, Tag tag, uint64_t id) override {
      b_->PostSend(r, o, n, tag, id);
    }
    void PostRecv(const Region& r, size_t o, size_t n, Tag tag, uint64_t id) override {
      b_->PostRecv(r, o, n, tag, id);
    }
    void AskHold(bool on, size_t cap, uint64_t spare) override { b_->AskHold(on, cap, spare); }
    bool PostRecvTo(RecvSink* s, size_t n, size_t e, Tag tag, uint64_t id) override {
      return b_->PostRecvTo(s, n, e, tag, id);
    }
    bool SendCopies(const CopyMsg* m, size_t n) override { return b_->SendCopies(m, n); }
    bool Withdraw(uint64_t id) override { return b_->Withdraw(id); }
    bool TakeNow(Tag tag, uint64_t id, unsigned spins, const NextRecv* then) override {
      if (!b_->TakeNow(tag, id, spins, then)) return false;
      if (then) {
        const size_t before = t_.stash_.size();
        (void)t_.base_.Poll(&t_.stash_, Deadline::After(std::chrono::milliseconds(20)));
        if (t_.stash_.size() > before) ++t_.interleaved;
      }
      return true;
    }

   private:
    PollAfterTake& t_;
    Endpoint* b_;
  };
  std::unique_ptr<Ep> ep_;
  std::vector<Completion> stash_;
};
}  // namespace

TEST_CASE("shm: a frame taken where it lies is read whole though the next one lands at once", "[transport]") {
  auto pair = test::ConnectedShmPair("take-then-poll");
  PollAfterTake racing(*pair[1]);
  Mailbox a(*pair[0], Box(0));
  Mailbox b(racing, Box(1));
  REQUIRE(a.Start().ok());
  REQUIRE(b.Start().ok());
  constexpr unsigned kSpins = 1u << 22;
  // Messages inside their frames, sent back to back: each take finds the next frame there.
  const int32_t sent[4] = {111, 222, 333, 444};
  for (const int32_t& v : sent) REQUIRE(a.SendSmall(1, 5, &v, 4, DType::kI32));
  for (int32_t want : sent) {
    int32_t got = 0;
    auto r = Receive(&got, 1, DType::kI32, 0, 5);
    if (b.TakeInline(0, 5, &got, 4, DType::kI32, nullptr, kSpins) != Mailbox::Taken::kMine) {
      b.Post(r);
      REQUIRE(Await(b, *r));
      CHECK(r->status.ok());
    }
    CHECK(got == want);
  }
  CHECK(racing.interleaved > 0);  // the interleaving happened
  // A larger message's frame, taken by TakeFrame, with the next frame landing at once: behind
  // the payload, which the poll holds aside as a link shared by two communicators does.
  pair[1]->HoldEarly(1 << 20);
  std::vector<char> out(1000, 7), in(1000, 0), in2(1000, 0);
  REQUIRE(a.SendSmall(1, 6, out.data(), out.size(), DType::kU8));
  out.assign(out.size(), 9);
  REQUIRE(a.SendSmall(1, 6, out.data(), out.size(), DType::kU8));
  auto r1 = Receive(in.data(), in.size(), DType::kU8, 0, 6);
  auto r2 = Receive(in2.data(), in2.size(), DType::kU8, 0, 6);
  b.Post(r1);
  b.Post(r2);
  while (!r1->done && b.TakeFrame(0, kSpins)) {
  }
  REQUIRE(Await(b, *r1));
  REQUIRE(Await(b, *r2));
  CHECK(in == std::vector<char>(1000, 7));
  CHECK(in2 == std::vector<char>(1000, 9));
}

namespace {
// A link whose payload completions come late: while `hold` is on, the completions of payload
// receives (op kind kDataIn, bits 56-62 = 3) are kept back and handed out by the first poll after
// it is off, and the fast path takes nothing, so a peer's next frame (its goodbye) is read before
// the payload that came ahead of it on the wire, as a poll of several links may order them.
class DataLate : public Forwarding {
 public:
  using Forwarding::Forwarding;
  Status Poll(std::vector<Completion>* out, Deadline deadline, SpinGate gate) override {
    if (!hold && !late_.empty()) {
      out->insert(out->end(), late_.begin(), late_.end());
      late_.clear();
      return Status::Ok();
    }
    std::vector<Completion> got;
    Status s = base_.Poll(&got, deadline, gate);
    for (const Completion& c : got) {
      if (hold && ((c.op_id >> 56) & 0x7f) == 3)
        late_.push_back(c);
      else
        out->push_back(c);
    }
    return s;
  }
  bool hold = true;
  size_t held() const { return late_.size(); }

 private:
  std::vector<Completion> late_;
};

// Polls `m` for `ms` milliseconds, whatever comes.
void PollFor(Mailbox& m, int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) m.Progress(Deadline::After(std::chrono::milliseconds(5)));
}

// What freeing a communicator does to its mailbox while others go on over the link (CommCore).
void Free(Mailbox& m) {
  m.FailAll(Aborted("the communicator was destroyed with the call pending"));
  m.Retire();
  PollFor(m, 100);  // its frames out, a late CTS answered
}
}  // namespace

TEST_CASE("shm: a message sent before its sender freed the communicator is received though the goodbye is read first",
          "[transport]") {
  auto pair = test::ConnectedShmPair("bye-before-payload");
  DataLate late(*pair[1]);
  Mailbox a(*pair[0], Box(0));
  Mailbox b(late, Box(1));
  REQUIRE(a.Start().ok());
  REQUIRE(b.Start().ok());
  // Two eager messages (frame, then payload): one whose receive is posted first, one received
  // after the goodbye. The sends are done when the sender frees the communicator.
  std::vector<char> out1(1000, 7), out2(3000, 9), in1(1000, 0), in2(3000, 0);
  auto r1 = Receive(in1.data(), in1.size(), DType::kU8, 0, 6);
  b.Post(r1);
  REQUIRE(a.SendSmall(1, 6, out1.data(), out1.size(), DType::kU8));
  REQUIRE(a.SendSmall(1, 7, out2.data(), out2.size(), DType::kU8));
  Free(a);
  PollFor(b, 200);  // both frames and the goodbye read; the payloads' completions held
  REQUIRE(late.held() == 2);
  CHECK_FALSE(r1->done);  // its payload is still landing: not failed by the goodbye
  auto r2 = Receive(in2.data(), in2.size(), DType::kU8, 0, 7);
  b.Post(r2);
  late.hold = false;
  REQUIRE(Await(b, *r1));
  REQUIRE(Await(b, *r2));
  CHECK(r1->status.ok());
  CHECK(r2->status.ok());
  CHECK(in1 == out1);
  CHECK(in2 == out2);
  // Anything else from the freed communicator fails at once, naming why.
  std::vector<char> in3(8, 0);
  auto r3 = Receive(in3.data(), in3.size(), DType::kU8, 0, 6);
  b.Post(r3);
  REQUIRE(Await(b, *r3));
  CHECK_THAT(r3->status.message(), Catch::Contains("freed the communicator"));
}

TEST_CASE("shm: a rendezvous its sender gave up when freeing the communicator fails its receive, never takes zeros",
          "[transport]") {
  auto pair = test::ConnectedShmPair("bye-abandoned-rndv");
  // The late CTS's NACK comes after the goodbye, and nothing receives it: set aside, as a link
  // shared by several communicators does, so the zeros behind it reach their receive.
  pair[1]->HoldEarly(1 << 20);
  DataLate late(*pair[1]);
  Mailbox a(*pair[0], Box(0));
  Mailbox b(late, Box(1));
  REQUIRE(a.Start().ok());
  REQUIRE(b.Start().ok());
  // A nonblocking send too large to go eagerly: its RTS reaches the receiver, whose receive
  // sends the CTS; the sender frees the communicator before reading it (its send fails there).
  std::vector<char> out(256 * 1024, 5), in(256 * 1024, 1);
  auto s = Receive(out.data(), out.size(), DType::kU8, 1, 8);
  s->is_send = true;
  a.Post(s);
  PollFor(a, 50);
  PollFor(b, 100);  // the RTS, held unexpected
  auto r = Receive(in.data(), in.size(), DType::kU8, 0, 8);
  b.Post(r);  // the CTS goes out
  Free(a);    // the send fails; its NACK, then the goodbye; the late CTS gets zeros
  REQUIRE(s->done);
  CHECK_FALSE(s->status.ok());
  late.hold = false;
  // The freed mailbox goes on answering (the hub polls it) until the receiver has its answer.
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!r->done && std::chrono::steady_clock::now() < end) {
    a.Progress(Deadline::After(std::chrono::milliseconds(2)));
    b.Progress(Deadline::After(std::chrono::milliseconds(2)));
  }
  REQUIRE(r->done);
  CHECK(r->status.code() != Code::kOk);
  CHECK_THAT(r->status.message(), Catch::Contains("rank 0 freed the communicator before sending this message"));
}
