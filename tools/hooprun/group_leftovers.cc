#include "tools/hooprun/group_leftovers.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "tools/hooprun/shm_leftovers.h"

namespace hoop::run {
namespace {

using Clock = std::chrono::steady_clock;

// The command line of process `pid`, NULs as spaces, at most 60 characters.
std::string CommandOf(pid_t pid) {
  std::string c = ReadProcFile("/proc/" + std::to_string(pid) + "/cmdline");
  for (char& ch : c)
    if (ch == '\0') ch = ' ';
  while (!c.empty() && c.back() == ' ') c.pop_back();
  return c.size() > 60 ? c.substr(0, 57) + "..." : c;
}

// Whether group `pgid` may be ours to signal: its leader (the rank) is gone, so nothing can have
// been given the number since while a member of the group lives; a process by that number now
// means the group emptied and the number went to another.
bool LeaderGone(pid_t pgid) { return ::kill(pgid, 0) != 0; }

}  // namespace

std::vector<std::string> GroupMembers(pid_t pgid) {
  std::vector<std::string> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    const std::string stat = ReadProcFile("/proc/" + std::string(e->d_name) + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    char state = 0;
    long ppid = 0, group = 0;
    if (std::sscanf(stat.c_str() + paren + 1, " %c %ld %ld", &state, &ppid, &group) != 3) continue;
    if (group == pgid && state != 'Z') out.push_back(std::to_string(pid) + " " + CommandOf(static_cast<pid_t>(pid)));
  }
  ::closedir(d);
  return out;
}

std::vector<std::string> StopLeftovers(const std::vector<std::pair<std::string, pid_t>>& groups,
                                       std::chrono::milliseconds grace) {
  struct Left {
    std::string who;
    pid_t pgid;
    std::vector<std::string> members;
    bool killed = false;
  };
  std::vector<Left> left;
  for (const auto& [who, pgid] : groups)
    if (pgid > 0 && LeaderGone(pgid) && ::kill(-pgid, 0) == 0) left.push_back({who, pgid, {}});
  auto empty = [](const Left& l) { return !LeaderGone(l.pgid) || GroupMembers(l.pgid).empty(); };
  // A moment for what ends by itself when its parent does (a worker that watches it).
  for (auto until = Clock::now() + std::chrono::milliseconds(300); Clock::now() < until;) {
    std::erase_if(left, empty);
    if (left.empty()) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (auto& l : left) {
    l.members = GroupMembers(l.pgid);
    ::kill(-l.pgid, SIGTERM);
  }
  for (auto until = Clock::now() + grace; Clock::now() < until;) {
    bool all = true;
    for (const auto& l : left) all &= empty(l);
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::vector<std::string> lines;
  for (auto& l : left) {
    if (l.members.empty()) continue;
    if (!empty(l)) {
      ::kill(-l.pgid, SIGKILL);
      l.killed = true;
    }
    std::string what;
    for (const auto& m : l.members) what += (what.empty() ? "" : ", ") + m;
    lines.push_back(l.who + " left " + std::to_string(l.members.size()) +
                    (l.members.size() == 1 ? " process" : " processes") + " running (" + what + "): stopped (" +
                    (l.killed ? "SIGKILL" : "SIGTERM") + ")");
  }
  return lines;
}

}  // namespace hoop::run
