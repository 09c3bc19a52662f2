// The timeline (HOOP_TIMELINE=FILE): a Chrome trace (the JSON array form of the Trace Event
// Format) with one row per tensor name and a span for each phase it went through:
//   NEGOTIATE                from its submission until every rank agreed to run it
//   QUEUE                    from then until its group started
//   MEMCPY_IN_FUSION_BUFFER  packing its group into the fusion buffer (fused groups only)
//   ALLREDUCE / BROADCAST / ALLGATHER   the collective (args: the group's size and bytes)
//   MEMCPY_OUT_FUSION_BUFFER unpacking into the callers' buffers (fused groups only)
// With mark_cycles (HOOP_TIMELINE_MARK_CYCLES, Horovod's mark_cycles), an instant event
// CYCLE_START marks each negotiation cycle. Open it in chrome://tracing or Perfetto. Only rank 0 writes one, as in Horovod. Events are
// written by the runtime's thread alone, buffered, and flushed once per cycle that wrote any.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <unordered_map>

#include "common/status.h"

namespace hoop::fusion {

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;
  Timeline() = default;
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // An empty path leaves the timeline off (every call below then does nothing).
  Status Open(const std::string& path, int rank, bool mark_cycles = false);
  bool on() const { return file_ != nullptr; }
  // `args` is a JSON object's members, e.g. "\"tensors\":12", or "".
  void Span(const std::string& tensor, const char* phase, Clock::time_point start, Clock::time_point end,
            const std::string& args = "");
  void MarkCycle(Clock::time_point t);  // CYCLE_START, where asked for
  void Flush();
  void Close();

 private:
  int Row(const std::string& tensor);
  double Micros(Clock::time_point t) const;
  std::FILE* file_ = nullptr;
  int pid_ = 0;
  bool wrote_ = false, dirty_ = false, mark_cycles_ = false;
  Clock::time_point origin_;
  std::unordered_map<std::string, int> rows_;
};

}  // namespace hoop::fusion
