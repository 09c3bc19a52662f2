// Signals belong to the program, not to the libraries under the back ends.
//
// UCX (libucs) and libfabric's psm provider (libinfinipath) install signal handlers when they are
// loaded or started: libucs catches SIGSEGV, SIGBUS, SIGILL and SIGFPE to print a backtrace,
// libinfinipath catches SIGINT, SIGTERM and SIGABRT, and both end the process with exit(1). A
// program linked with -lhoop then never dies by the signal it got: no core is left, a parent
// (hooprun, mpirun, a shell) sees "exited with code 1", SIGTERM from a launcher reads as a failure
// of the rank's own, and an interpreter that loads hoop (Python's `import hoop`) loses its own
// SIGINT handler, so Ctrl-C no longer raises KeyboardInterrupt.
//
// So every signal whose handler lies in one of those libraries gets back exactly the action that
// was there before they took it: at load, the action libhoop_signals saw before any constructor
// ran (transport/signals/at_load.c, initialised first); after a back end starts, the action from
// just before. A handler the program or any other library installed is left alone; a signal the
// program ignored stays ignored.
#pragma once

#include <signal.h>

#include <vector>

namespace hoop {

// The actions of the signals the back ends were seen to catch, as they are now.
struct SignalActions {
  std::vector<std::pair<int, struct sigaction>> actions;
};
SignalActions SaveSignalActions();

// Gives every signal whose handler lies in a back end's library the action `before` holds for it
// (SIG_DFL if it holds none, or holds a back end's too); returns which signals changed.
std::vector<int> RestoreBackEndSignals(const SignalActions& before);

// At load: `before` is what libhoop_signals saw before any library's constructor ran.
std::vector<int> RestoreBackEndSignalsAtLoad();

}  // namespace hoop
