// A completion that posts again, from inside the mailbox's failure paths, on a real pair of
// shared-memory segments in one process. Expire (calls past their deadline) and LosePeer (a peer
// said goodbye) complete many calls in one go; a call's callback may post another send or
// receive (a caller's thread woken by it posts its next one while the owner still holds the
// transport in the communicator's worker; a framework's completion hook may post). Those walks must not
// be in the middle of the tables the new call goes into: every call fails once, with the reason
// that is its own, and what the callbacks posted is handled like any other call.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/shm_pair.h"
#include "transport/tagged/mailbox.h"

using namespace hoop;

namespace {
Mailbox::Options Box(int rank) { return {.rank = rank, .size = 2}; }

// Calls made by one test; each records its status, and the first ones post one receive more
// (from `again_peer`, due at `again_by`) from inside their completion.
struct Calls {
  Mailbox* box = nullptr;
  std::vector<std::shared_ptr<P2pCall>> all;
  std::vector<char> memory = std::vector<char>(1 << 20);  // what every send reads, every receive writes

  std::shared_ptr<P2pCall> Make(bool is_send, int peer, int tag, size_t bytes, Deadline deadline) {
    auto c = std::make_shared<P2pCall>();
    c->is_send = is_send;
    c->peer = peer;
    c->tag = tag;
    c->data = memory.data();
    c->count = bytes;
    c->dtype = DType::kU8;
    c->deadline = deadline;
    P2pCall* raw = c.get();
    c->complete = [raw](const Status& s) {
      raw->status = s;
      raw->done = true;
    };
    all.push_back(c);
    return c;
  }
  std::shared_ptr<P2pCall> MakeReposting(bool is_send, int tag, size_t bytes, Deadline deadline, int again_peer,
                                         Deadline again_by) {
    auto c = Make(is_send, 0, tag, bytes, deadline);
    P2pCall* raw = c.get();
    c->complete = [this, raw, tag, again_peer, again_by](const Status& s) {
      raw->status = s;
      raw->done = true;
      box->Post(Make(false, again_peer, tag + 100000, 64, again_by));
    };
    return c;
  }
  size_t Done() const {
    size_t n = 0;
    for (const auto& c : all) n += c->done ? 1 : 0;
    return n;
  }
  // The calls from `first` on: done, failed with `code`, the message naming `why`.
  void CheckFailed(size_t first, size_t end, Code code, const std::string& why) const {
    for (size_t i = first; i < end; ++i) {
      const auto& c = all[i];
      INFO("call " << i << ", tag " << c->tag << ": " << c->status.ToString());
      CHECK(c->done);
      CHECK(c->status.code() == code);
      CHECK(c->status.message().find(why) != std::string::npos);
    }
  }
};
}  // namespace

TEST_CASE("shm: receives that post again from their completion inside Expire all fail once, by their deadline",
          "[transport]") {
  auto pair = test::ConnectedShmPair("reentry-expire");
  Mailbox b(*pair[1], Box(1));
  REQUIRE(b.Start().ok());
  Calls calls;
  calls.box = &b;
  // Enough that the posted receives' deque grows past its first blocks while Expire walks it.
  constexpr size_t kCalls = 600;
  const Deadline past = Deadline::After(std::chrono::milliseconds(0));
  for (size_t i = 0; i < kCalls; ++i) b.Post(calls.MakeReposting(false, static_cast<int>(i), 64, past, 0, past));
  REQUIRE(calls.Done() == 0);
  b.Expire();
  // The first ones failed; what their callbacks posted came after the walk, and waits for the next.
  REQUIRE(calls.all.size() == 2 * kCalls);
  CHECK(calls.Done() == kCalls);
  calls.CheckFailed(0, kCalls, Code::kDeadlineExceeded, "no matching message came within");
  b.Expire();
  calls.CheckFailed(kCalls, 2 * kCalls, Code::kDeadlineExceeded, "no matching message came within");
  CHECK_FALSE(b.Busy());
}

TEST_CASE("shm: sends and receives that post again from their completion when the peer says goodbye all fail once",
          "[transport]") {
  auto pair = test::ConnectedShmPair("reentry-bye");
  Mailbox a(*pair[0], Box(0));  // leaves
  Mailbox b(*pair[1], Box(1));  // stays, with calls open to rank 0
  REQUIRE(a.Start().ok());
  REQUIRE(b.Start().ok());
  Calls calls;
  calls.box = &b;
  constexpr size_t kCalls = 300;
  const Deadline later = Deadline::After(std::chrono::seconds(60));
  const Deadline past = Deadline::After(std::chrono::milliseconds(0));
  // Each posts an any-source receive as it fails: one rank 0's goodbye does not refuse, so it
  // goes into the table LosePeer walks.
  for (size_t i = 0; i < kCalls; ++i) {
    const int tag = static_cast<int>(i);
    b.Post(calls.MakeReposting(false, tag, 64, later, kAnySource, past));
    // Larger than an eager message: each waits for a CTS rank 0 never sends.
    b.Post(calls.MakeReposting(true, tag, kEagerMax + 1, later, kAnySource, past));
  }
  // Rank 0 hears the RTS frames, then frees its communicator and says goodbye.
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < end && b.FramesOut()) {
    a.Progress(Deadline::After(std::chrono::milliseconds(1)));
    b.Progress(Deadline::After(std::chrono::milliseconds(1)));
  }
  a.FailAll(Aborted("freed"));
  a.Retire();
  while (std::chrono::steady_clock::now() < end && calls.Done() < 2 * kCalls) {
    a.Progress(Deadline::After(std::chrono::milliseconds(1)));
    b.Progress(Deadline::After(std::chrono::milliseconds(1)));
  }
  // Every first call failed as the goodbye came, once; what each posted is open.
  REQUIRE(calls.all.size() == 4 * kCalls);
  CHECK(calls.Done() == 2 * kCalls);
  calls.CheckFailed(0, 2 * kCalls, Code::kFailedPrecondition, "lost rank 0");
  b.Expire();
  calls.CheckFailed(2 * kCalls, 4 * kCalls, Code::kDeadlineExceeded, "no matching message came within");
  CHECK_FALSE(b.Busy());
}
