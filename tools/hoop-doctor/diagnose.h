// hoop-doctor's analysis: from the dumps of one communicator's ranks, the finding that explains
// its hang or failure, in a few lines, checked in this order (the first found is the verdict):
//   3  mismatch: at some collective the ranks called different ones, or the same with other
//      arguments (count, dtype, root): a call out of order, a skipped call, a size off by one
//   4  died: a rank without a dump whom the others saw go (lost peer)
//   7  no dump: a rank without one whom the others wait for: stopped (SIGSTOP, a debugger), or
//      stuck with the signal blocked, or gone without a trace
//   5  never entered: the first collective some ranks entered and others never did; the others
//      are in their own code (stuck before the call, or past it having skipped it)
//   6  stuck inside: every rank entered it, some wait in it: at which step, on which peer
//   8  failed: an error recorded that none of the above explains
//   0  nothing wrong found: every rank's last collective done
#pragma once

#include <string>
#include <vector>

#include "tools/hoop-doctor/dumps.h"

namespace hoop::doctor {

enum Verdict { kHealthy = 0, kMismatch = 3, kDied = 4, kNeverEntered = 5, kStuck = 6, kNoDump = 7, kFailed = 8 };
const char* VerdictName(Verdict v);

struct Diagnosis {
  std::string comm;
  int size = 0, dumps = 0;
  Verdict verdict = kHealthy;
  std::vector<int> culprits;       // the ranks the verdict names
  int64_t seq = -1;                // the collective it is about
  std::vector<std::string> lines;  // the explanation, most important first
};

// One per communicator, in name order.
std::vector<Diagnosis> Diagnose(const std::vector<RankDump>& dumps);

// "1", "0, 2", "0-3, 5"
std::string RankList(const std::vector<int>& ranks);

}  // namespace hoop::doctor
