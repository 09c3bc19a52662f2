// `hooprun --status`, the live view of a running job (issue 55): asks every rank, through the
// job's store, for its flight recorders (collectives/core/trace_status.h) and prints one table,
// a row per rank and communicator: where it is (the operation, its sequence number, how long it
// has waited, the step and chunk), who is behind, who did not answer (stopped, for a local rank
// whose process is; not started, or without a communicator) and who is gone (hooprun's own record
// of each rank's end). Where some rank has waited over a second, the table is followed by
// hoop-doctor's finding (tools/hoop-doctor/diagnose.h) on the same answers, and the exit code is
// that finding's.
//
// A running hooprun is found by its job file, <TMPDIR or /tmp>/hoop-<uid>/hooprun.<pid>.json
// (mode 0600: it holds the job token), written as the job starts and removed as it ends.
// hooprun also keeps, in its store, hoop/launcher/ranks: each rank's host, pid and state.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tools/hooprun/options.h"
#include "tools/hooprun/ranks.h"

namespace hoop::run {

// Writes this hooprun's job file; its path ("" where it could not be written, which costs only
// the live view and is said once).
std::string WriteJobFile(const std::map<std::string, std::string>& env, const std::string& store,
                         const std::string& token, int np, const std::vector<std::string>& command);
void RemoveJobFile(const std::string& path);

// One rank as hoop/launcher/ranks lists it: {"rank", "host", "pid", "state": "running"|"exited",
// "how": "exit code 1"|"signal 9 (Killed)"}.
std::string RankStateJson(const Rank& r);

// The whole of `hooprun --status [PID]`: its exit code.
int ShowStatus(const Options& o, const std::map<std::string, std::string>& env);

}  // namespace hoop::run
