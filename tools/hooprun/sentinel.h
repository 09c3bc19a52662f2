// The sentinel: a small process hooprun forks first, in a process group of its own, that outlives
// hooprun only to clean up after it. Every rank runs in its own process group and gets SIGKILL
// when hooprun dies (PR_SET_PDEATHSIG), but that reaches only the rank's own process: ranks
// started through a wrapper script (sh -c '...; prog') left their real program running when
// hooprun was SIGKILLed. hooprun tells the sentinel, over a pipe, each rank's process group as it
// starts it and forgets it once reaped; when the pipe closes without hooprun's "done" (hooprun
// died, however), the sentinel SIGKILLs every group still listed, then exits.
#pragma once

#include <sys/types.h>

namespace hoop::run {

class Sentinel {
 public:
  // Forks the sentinel; on failure hooprun runs without it (it says so).
  Sentinel();
  ~Sentinel() { Done(); }
  // Tells it hooprun reaped every rank: it exits, killing nothing.
  void Done();
  void Started(pid_t pgid);
  void Reaped(pid_t pgid);

 private:
  void Send(int32_t word);
  int fd_ = -1;  // the pipe's write end
};

}  // namespace hoop::run
