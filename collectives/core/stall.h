// Who stopped making progress, when an operation times out.
//
// A rank that times out knows only whom it waits for directly; with one rank stopped (SIGSTOP,
// stuck in its own code, waiting on something else) every other rank waits for someone, and most
// of them for a rank that is itself waiting. So each rank that times out writes whom it waits for
// into the job's store (hoop/<comm>/stall/<rank>) and follows those records from its own: a rank
// whose record has not appeared within a grace period is not waiting inside hoop, and it is the
// one the others are all, directly or through one another, waiting for. Every rank that times
// out reaches the same answer, writes it (hoop/<comm>/stalled/<rank>, which hooprun reads to
// name the rank in its last line), and says it in its error. Where every rank waits for another
// (ranks that called collectives in different orders) it says that instead.
//
// All of it fits in HOOP_TIMEOUT: a collective waits HOOP_TIMEOUT less StallGrace (a quarter,
// 1 to 10 s, at most half), and the search for the stopped rank takes at most StallGrace, so
// no call fails later than HOOP_TIMEOUT after it started.
#pragma once

#include <chrono>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "common/deadline.h"
#include "transport/store/store.h"

namespace hoop {

struct StallVerdict {
  std::vector<int> stalled;  // the ranks not waiting inside hoop (empty: none found)
  std::string explanation;   // "rank 2 is not making progress (rank 0 waits for 1, 1 for 2)"
};

// `waiting_for`: the peers this rank's timed-out operation waits for. Store calls are bounded by
// `grace`; a store that fails gives an empty verdict.
StallVerdict FindStalledRanks(Store& store, const std::string& prefix, int rank, const std::vector<int>& waiting_for,
                              Deadline grace);

// How long the search may take, out of `timeout` (HOOP_TIMEOUT).
std::chrono::milliseconds StallGrace(std::chrono::milliseconds timeout);
// "timed out after 2.25 s (HOOP_TIMEOUT 3 s, less 0.75 s to find who stopped)": the words of a
// collective's timeout; `timeout_s` is HOOP_TIMEOUT, or what `name` says set it.
void SayTimedOut(std::ostream& os, double timeout_s, std::string_view name = "HOOP_TIMEOUT");

// What a StallVerdict's record holds, for hooprun: "1,3" -> {1, 3}; false if malformed.
bool ParseRankList(const std::string& text, std::vector<int>* ranks);
std::string RankListText(const std::vector<int>& ranks);  // {1, 3} -> "1,3"

}  // namespace hoop
