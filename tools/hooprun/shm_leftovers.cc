// See shm_leftovers.h.
#include "tools/hooprun/shm_leftovers.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>
#include <sstream>

namespace hoop::run {

namespace {

constexpr char kDir[] = "/dev/shm/";
constexpr char kUcxPrefix[] = "ucx_shm_posix_";

}  // namespace

std::string ReadProcFile(const std::string& path) {
  std::string text;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return text;
}

std::set<std::string> HeldInDevShm() {
  std::set<std::string> held;
  auto note = [&](const std::string& path) {
    if (path.rfind(kDir, 0) != 0) return;
    std::string name = path.substr(sizeof kDir - 1);
    name = name.substr(0, name.find(" (deleted)"));
    held.insert(name);
  };
  DIR* procs = ::opendir("/proc");
  if (!procs) return held;
  while (dirent* p = ::readdir(procs)) {
    if (p->d_name[0] < '0' || p->d_name[0] > '9') continue;
    const std::string dir = std::string("/proc/") + p->d_name;
    if (DIR* fds = ::opendir((dir + "/fd").c_str())) {
      while (dirent* f = ::readdir(fds)) {
        char target[4096];
        const ssize_t n = ::readlink((dir + "/fd/" + f->d_name).c_str(), target, sizeof target - 1);
        if (n > 0) note(std::string(target, static_cast<size_t>(n)));
      }
      ::closedir(fds);
    }
    std::istringstream maps(ReadProcFile(dir + "/maps"));
    for (std::string line; std::getline(maps, line);)
      if (const size_t at = line.find(kDir); at != std::string::npos) note(line.substr(at));
  }
  ::closedir(procs);
  return held;
}

std::vector<std::string> RemoveUcxLeftovers(std::time_t job_began) {
  std::vector<std::string> candidates, removed;
  if (DIR* d = ::opendir(kDir)) {
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      struct stat st {};
      if (name.rfind(kUcxPrefix, 0) != 0 || ::stat((kDir + name).c_str(), &st) != 0) continue;
      if (st.st_uid == ::geteuid() && st.st_mtime >= job_began) candidates.push_back(name);
    }
    ::closedir(d);
  }
  if (candidates.empty()) return removed;
  const std::set<std::string> held = HeldInDevShm();
  for (const auto& name : candidates)
    if (!held.count(name) && ::unlink((kDir + name).c_str()) == 0) removed.push_back(name);
  return removed;
}

}  // namespace hoop::run
