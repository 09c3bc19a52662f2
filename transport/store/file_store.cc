#include "transport/store/file_store.h"

#include <atomic>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "transport/store/memory_store.h"

namespace hoop {
namespace {
bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}
// A temporary name no other writer uses, in this process (threads) or another.
std::string TempName(const std::string& path) {
  static std::atomic<uint64_t> next{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(next.fetch_add(1));
}

Status WriteAtomically(const std::string& path, const std::string& value) {
  std::string tmp = TempName(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return ErrnoStatus(Code::kUnavailable, "file store: cannot write " + tmp, errno);
    out << value;
    if (!out) return Unavailable("file store: write failed: " + tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return ErrnoStatus(Code::kUnavailable, "file store: rename " + tmp, errno);
  return Status::Ok();
}
}  // namespace

StatusOr<std::unique_ptr<FileStore>> FileStore::Open(const std::string& dir) {
  if (dir.empty()) return InvalidArgument("file store: empty directory");
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return ErrnoStatus(Code::kUnavailable, "file store: mkdir " + dir, errno);
  return std::unique_ptr<FileStore>(new FileStore(dir));
}

std::string FileStore::PathOf(const std::string& key) const {
  // Keys may contain '/', which must not become directories: hex-escape anything unusual.
  std::string name;
  for (unsigned char c : key) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.') {
      name += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof(buf), "%%%02x", c);
      name += buf;
    }
  }
  return dir_ + "/" + name;
}

Status FileStore::Set(const std::string& key, const std::string& value) { return WriteAtomically(PathOf(key), value); }

StatusOr<std::string> FileStore::Get(const std::string& key, Deadline deadline) {
  Backoff backoff(1, 50);
  std::string value;
  while (!ReadFile(PathOf(key), &value)) {
    if (deadline.Expired()) return DeadlineExceeded("file store: key '" + key + "' did not appear in time");
    backoff.Pause(deadline);
  }
  return value;
}

StatusOr<std::string> FileStore::SetIfAbsent(const std::string& key, const std::string& value, Deadline deadline) {
  const std::string path = PathOf(key);
  const std::string tmp = TempName(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return ErrnoStatus(Code::kUnavailable, "file store: cannot write " + tmp, errno);
    out << value;
    if (!out) return Unavailable("file store: write failed: " + tmp);
  }
  const int linked = ::link(tmp.c_str(), path.c_str());  // fails where the key exists: the first value stays
  const int why = errno;
  ::unlink(tmp.c_str());
  if (linked == 0) return value;
  if (why != EEXIST) return ErrnoStatus(Code::kUnavailable, "file store: link " + path, why);
  return Get(key, deadline);
}

StatusOr<int64_t> FileStore::Add(const std::string& key, int64_t delta) {
  std::string lock_path = dir_ + "/.lock";
  int fd = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoStatus(Code::kUnavailable, "file store: open " + lock_path, errno);
  if (::flock(fd, LOCK_EX) != 0) {
    ::close(fd);
    return ErrnoStatus(Code::kUnavailable, "file store: flock", errno);
  }
  std::string old;
  ReadFile(PathOf(key), &old);
  auto sum = AddToCounter(old, delta);
  const int64_t v = sum.value_or(0);
  Status s = sum ? WriteAtomically(PathOf(key), std::to_string(v))
                 : InvalidArgument("file store: adding " + std::to_string(delta) + " to '" + key + "' would overflow");
  ::flock(fd, LOCK_UN);
  ::close(fd);
  if (!s.ok()) return s;
  return v;
}

Status FileStore::Claim(const std::string& token, int rank) {
  // FNV-1a of the token: the directory may be readable by others, the token must not be.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : token) h = (h ^ c) * 1099511628211ull;
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  const std::string mine = std::to_string(h), me = std::string(host) + ":" + std::to_string(::getpid());
  auto other = [&](const std::string& why) {
    return Status(Code::kFailedPrecondition, "file store " + dir_ + " holds another job's entries (" + why +
                                                 "); give every job a fresh directory, or empty this one");
  };
  std::string job;
  if (ReadFile(PathOf("hoop/job"), &job) && job != mine) return other("written with another HOOP_JOB_TOKEN");
  // Owners "host:pid" per rank: this rank's by another process, or any rank's by a process of
  // this host that has exited, are a finished (or failed) job's.
  const std::string prefix = "hoop%2fowner%2f";
  if (DIR* d = ::opendir(dir_.c_str())) {
    Status found;
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind(prefix, 0) != 0 || name.find(".tmp.") != std::string::npos) continue;
      const std::string r = name.substr(prefix.size());
      std::string owner;
      if (!ReadFile(dir_ + "/" + name, &owner) || owner == me) continue;
      const size_t colon = owner.rfind(':');
      const bool here = colon != std::string::npos && owner.substr(0, colon) == host;
      const long pid = here ? std::atol(owner.c_str() + colon + 1) : 0;
      if (r == std::to_string(rank))
        found = other("rank " + r + "'s were written by " + owner + ", this rank is " + me);
      else if (here && pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
        found =
            other("rank " + r + "'s were written by pid " + std::to_string(pid) + " of this host, which has exited");
      if (!found.ok()) break;
    }
    ::closedir(d);
    HOOP_RETURN_IF_ERROR(found);
  }
  if (job.empty()) HOOP_RETURN_IF_ERROR(Set("hoop/job", mine));
  return Set("hoop/owner/" + std::to_string(rank), me);
}

void FileStore::RemoveAll() {
  DIR* d = ::opendir(dir_.c_str());
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    // Only what this store writes: escaped keys ("hoop%2f..."), their temporaries, the lock.
    if (name.rfind("hoop%2f", 0) == 0 || name == ".lock") ::unlink((dir_ + "/" + name).c_str());
  }
  ::closedir(d);
  ::rmdir(dir_.c_str());  // only if nothing else is in it
}

}  // namespace hoop
