// Flight recorder dumps on a signal (issue 55): `kill -USR1 <rank>` (or hooprun's, which it
// forwards to every rank) writes every communicator's recorder in that process, as
// hoop-trace.<comm>.<rank>.json, into HOOP_TRACE_DIR (hooprun sets it to --output-filename's
// folder where the user did not), else the temporary folder ($TMPDIR, else /tmp), and says where.
//
// A signal has no context but the process: this is the one process-wide registry in the
// library, the communicators that record (CommCore registers itself while it lives). The handler
// only writes a byte to a pipe (async-signal-safe); a thread of its own, started with the first
// registration, reads it and dumps, taking no lock a stuck thread may hold: the registry's own
// (held by a communicator's construction and destruction only, never across a wait) and, for
// the queue's listing, its lock for 100 ms at most. The handler is installed only where the
// signal's action is the default (which would kill the process): an application that handles
// SIGUSR1 itself keeps it. HOOP_TRACE_SIGNAL chooses USR1 (the default), USR2 or none.
#pragma once

#include <functional>
#include <string>

namespace hoop {

class TraceSignal {
 public:
  // Dumps the registrant's recorder (reason "signal"); a line saying where, or why not.
  using Dump = std::function<std::string()>;
  // While the returned handle lives, `sig` (SIGUSR1 or SIGUSR2) dumps through `dump`. A handle
  // of 0 means none (sig 0, or the signal belongs to the application).
  static int Register(int sig, Dump dump);
  static void Unregister(int handle);
};

}  // namespace hoop
