#include "transport/file_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <thread>

#include "transport/memory_store.h"

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
Status WriteAtomically(const std::string& path, const std::string& value) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
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

Status FileStore::Set(const std::string& key, const std::string& value) {
  return WriteAtomically(PathOf(key), value);
}

StatusOr<std::string> FileStore::Get(const std::string& key, Deadline deadline) {
  int backoff_ms = 1;
  std::string value;
  while (!ReadFile(PathOf(key), &value)) {
    if (deadline.Expired()) return DeadlineExceeded("file store: key '" + key + "' did not appear in time");
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(backoff_ms, deadline.RemainingMs())));
    backoff_ms = std::min(backoff_ms * 2, 50);
  }
  return value;
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

}  // namespace hoop
