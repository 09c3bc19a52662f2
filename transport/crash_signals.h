// Crash signals belong to the program, not to the libraries under the back ends.
//
// UCX (libucs) and libfabric's psm provider (libinfinipath) install signal handlers when they are
// loaded: libucs catches SIGSEGV, SIGBUS, SIGILL and SIGFPE to print a backtrace, libinfinipath
// catches SIGINT, SIGTERM and SIGABRT, and both end the process with exit(1). A program linked
// with -lhoop then never dies by the signal it got: no core is left, a parent (hooprun, mpirun, a
// shell) sees "exited with code 1", and SIGTERM from a launcher reads as a failure of the rank's
// own. So libhoop, once those libraries are loaded (its constructor runs after theirs) and again
// after it starts a back end, gives every such signal whose handler lives in one of them back its
// default action. Handlers the program or any other library installed are left alone.
#pragma once

#include <vector>

namespace hoop {

// Resets to SIG_DFL every signal whose handler lies in a back end's library; returns which.
std::vector<int> RestoreBackEndSignals();

}  // namespace hoop
