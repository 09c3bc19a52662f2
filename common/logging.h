// Logging with a rank prefix: "hoop[rank 3] WARN: ...". The level and the rank are set once per
// process (by the communicator, from Config); a thread may say its own rank (the communicator's
// worker does), for processes that hold several ranks' communicators (the in-process tests).
// Log lines go to stderr, one write per line so lines from threads never interleave.
#pragma once

#include <sstream>
#include <string>

namespace hoop {

// kNone: hoop writes no log line at all (HOOP_LOG_LEVEL=none), for a caller that handles every
// error itself: each failure still comes back from its call, with the same message.
enum class LogLevel { kNone = -1, kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

void SetLogRank(int rank);        // the process's, and the calling thread's
void SetThreadLogRank(int rank);  // the calling thread's only
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
void LogLine(LogLevel level, const std::string& text);

}  // namespace hoop

#define HOOP_LOG(LEVEL, EXPR)                                       \
  do {                                                              \
    if (::hoop::LogEnabled(::hoop::LogLevel::LEVEL)) {              \
      std::ostringstream hoop_log_os_;                              \
      hoop_log_os_ << EXPR;                                         \
      ::hoop::LogLine(::hoop::LogLevel::LEVEL, hoop_log_os_.str()); \
    }                                                               \
  } while (0)
