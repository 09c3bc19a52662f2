// The live view's rank side (issue 55, `hooprun --status`): a running job is asked, through its
// store, for every rank's flight recorders, and each process answers from a thread of its own,
// whatever its other threads are doing (stuck in a collective, in Python before one). A rank
// that does not answer is stopped (SIGSTOP, a debugger), gone, or has no communicator yet.
//
// The exchange, all plain store calls (any client with the job's token may ask):
//   the asker:  n = Add("hoop/status/asked", 1); Set("hoop/status/ask/<n>", "")
//   each rank:  Set("hoop/status/<n>/<job rank>", {"hoop_status": 1, "job_rank", "pid", "host",
//               "comms": [one TraceJson per communicator, its last few operations and those in
//               flight]})
// A process watches with its own connection to the store (a parked Get: no traffic while idle,
// a new park every 10 s), opened with the first communicator that registers and closed once the
// last one is gone. Like trace_signal.h, one process-wide registry: the communicators of the
// process that answer. Registered by CommCore where its job's store is tcp:// and its launcher
// numbered the job (CommOptions::status_store).
#pragma once

#include <functional>
#include <string>

namespace hoop {

class TraceStatus {
 public:
  // One communicator's answer: its TraceJson.
  using Answer = std::function<std::string()>;
  // While the returned handle lives, asks through the store at `url` (tcp://HOST:PORT, with
  // `token`) are answered with `answer` among this process's (job rank `job_rank`). 0: none.
  static int Register(const std::string& url, const std::string& token, int job_rank, Answer answer);
  static void Unregister(int handle);
};

}  // namespace hoop
