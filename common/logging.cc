#include "common/logging.h"

#include <unistd.h>

#include <atomic>

namespace hoop {
namespace {
// Process-wide by nature (stderr is): the only mutable state of the logging module.
std::atomic<int> g_rank{-1};
thread_local int t_rank = -1;  // a thread's own rank, where one process holds several (tests)
std::atomic<int> g_level{static_cast<int>(LogLevel::kWarn)};
const char* LevelName(LogLevel l) {
  switch (l) {
    case LogLevel::kNone: return "NONE";
    case LogLevel::kError: return "ERROR";
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kDebug: return "DEBUG";
  }
  return "?";
}
}  // namespace

void SetLogRank(int rank) {
  g_rank = rank;
  t_rank = rank;
}
void SetThreadLogRank(int rank) { t_rank = rank; }
void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }
bool LogEnabled(LogLevel level) { return static_cast<int>(level) <= g_level.load(); }

void LogLine(LogLevel level, const std::string& text) {
  std::string line = "hoop";
  int rank = t_rank >= 0 ? t_rank : g_rank.load();
  if (rank >= 0) line += "[rank " + std::to_string(rank) + "]";
  line += " ";
  line += LevelName(level);
  line += ": ";
  line += text;
  line += "\n";
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

}  // namespace hoop
