// torch.distributed.monitored_barrier on backend hoop (gloo's semantics and wording): rank 0
// waits for a message from every other rank, then releases them, all within the timeout; where
// ranks do not arrive it says which ("[Rank 0]: Rank 2 failed to pass monitoredBarrier in 1000 ms",
// or with wait_all_ranks "Ranks 1, 2 ..."), with the original error where a call failed (a lost
// rank). It then revokes the group's communicator with that message (hoop_comm_revoke): the
// ranks waiting in the barrier, and a rank stuck in another call of the group, fail at once
// naming the missing ranks, instead of at their own timeouts with nothing to say. The group is
// unusable after that, as gloo's is after a failed monitored barrier.
//
// The messages are point-to-point calls of one byte on tags from kTagBase up, hoop's own
// (dist.send with such a tag would meet them), one pair of tags per barrier in sequence. The
// waits poll hoop_test without the GIL. The other ranks wait a second longer than rank 0, so
// that its verdict, which names the missing ranks, reaches them before their own.
#include <pybind11/pybind11.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "python/torch_ext/process_group.h"

namespace hoop::torch_ext {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kTagBase = 1 << 30;
constexpr int kTagPairs = 1 << 20;
constexpr auto kGrace = std::chrono::seconds(1);
constexpr const char* kOriginal = "\n Original exception: \n";                   // gloo's words before the error
constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::minutes(30);  // c10d's, where none is given

struct Pending {
  int rank = 0;
  hoop_request_t req = nullptr;
  bool done = false;
  std::string error;  // the call's failure, if it failed
};

// Until every request has ended or the deadline passed; an ended one is freed.
void PollUntil(std::vector<Pending>& ps, Clock::time_point deadline) {
  auto pause = std::chrono::microseconds(50);
  for (;;) {
    bool all = true;
    for (auto& p : ps) {
      if (p.done) continue;
      int done = 0;
      if (hoop_test(p.req, &done) != HOOP_SUCCESS) done = 1;  // hoop_wait then says why
      if (!done) {
        all = false;
        continue;
      }
      if (hoop_wait(p.req) != HOOP_SUCCESS) p.error = hoop_last_error();
      p.req = nullptr;
      p.done = true;
    }
    if (all || Clock::now() >= deadline) return;
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(5));
  }
}

// After a revoke the calls still pending end at once: wait for them, freeing them.
void Drain(std::vector<Pending>& ps) {
  for (auto& p : ps)
    if (p.req != nullptr) {
      hoop_wait(p.req);
      p.req = nullptr;
    }
}

bool Failed(const Pending& p) { return !p.done || !p.error.empty(); }

// gloo's wording: the first rank that failed, or (wait_all_ranks) every one.
std::string Verdict(const std::vector<Pending>& ps, bool all_ranks, long long ms) {
  std::vector<int> failed;
  std::string original;
  for (const auto& p : ps)
    if (Failed(p)) {
      failed.push_back(p.rank);
      if (original.empty()) original = p.error;
      if (!all_ranks) break;
    }
  std::string who = failed.size() == 1 ? "Rank " : "Ranks ";
  for (size_t i = 0; i < failed.size(); ++i) {
    if (i) who += ", ";
    who += std::to_string(failed[i]);
  }
  std::string m = "[Rank 0]: " + who + " failed to pass monitoredBarrier in " + std::to_string(ms) + " ms";
  if (!original.empty()) m += kOriginal + original;
  return m;
}

}  // namespace

void ProcessGroupHoop::monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) {
  const auto timeout = opts.timeout.count() > 0 ? opts.timeout : kDefaultTimeout;
  const int tag = kTagBase + 2 * static_cast<int>(monitored_seq_++ % kTagPairs);
  const int rank = getRank(), size = getSize();
  if (size == 1) return;
  std::optional<pybind11::gil_scoped_release> nogil;  // it waits for the others
  if (PyGILState_Check()) nogil.emplace();
  uint8_t out = 1;
  std::vector<uint8_t> in(static_cast<size_t>(size));
  std::vector<Pending> ps;
  auto post = [&](int peer, bool send, int t) {
    Pending p;
    p.rank = peer;
    const hoop_status_t s =
        send ? hoop_isend(comm_, &out, 1, HOOP_U8, peer, t, &p.req)
             : hoop_irecv(comm_, &in[static_cast<size_t>(peer)], 1, HOOP_U8, peer, t, nullptr, &p.req);
    if (s != HOOP_SUCCESS) {
      Drain(ps);
      throw std::runtime_error("hoop: monitored_barrier: " + std::string(hoop_last_error()));
    }
    ps.push_back(p);
  };
  const auto deadline = Clock::now() + timeout;
  std::string verdict;
  if (rank == 0) {
    for (int r = 1; r < size; ++r) post(r, false, tag);
    PollUntil(ps, deadline);
    bool ok = true;
    for (const auto& p : ps) ok = ok && !Failed(p);
    if (ok) {
      ps.clear();
      for (int r = 1; r < size; ++r) post(r, true, tag + 1);
      PollUntil(ps, Clock::time_point::max());
      for (const auto& p : ps)
        if (!p.error.empty())
          throw std::runtime_error("hoop: monitored_barrier: releasing rank " + std::to_string(p.rank) + ": " +
                                   p.error);
      return;
    }
    verdict = Verdict(ps, waitAllRanks, static_cast<long long>(timeout.count()));
  } else {
    post(0, true, tag);
    post(0, false, tag + 1);
    PollUntil(ps, deadline + kGrace);
    if (!Failed(ps[0]) && !Failed(ps[1])) return;
    for (const auto& p : ps)
      if (!p.error.empty())
        throw std::runtime_error("hoop: monitored_barrier: " + p.error);  // rank 0's verdict, or a loss
    verdict = "[Rank " + std::to_string(rank) + "]: rank 0 did not release monitoredBarrier within " +
              std::to_string(timeout.count() + std::chrono::milliseconds(kGrace).count()) + " ms";
  }
  std::string reason = verdict;  // on one line: the others' errors quote it
  if (const size_t at = reason.find(kOriginal); at != std::string::npos)
    reason = reason.substr(0, at) + " (" + reason.substr(at + std::string(kOriginal).size()) + ")";
  hoop_comm_revoke(comm_, reason.c_str());
  Drain(ps);
  throw std::runtime_error(verdict);
}

}  // namespace hoop::torch_ext
