#include "tools/hooprun/output.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>

namespace hoop::run {

Writer::Writer(int fd) : fd_(fd), progress_(std::chrono::steady_clock::now()), thread_([this] { Loop(); }) {}

Writer::~Writer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();  // hooprun exits with _Exit instead while a write is stuck (main.cc)
}

void Writer::Write(std::string text) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_) return;  // the reader is gone (EPIPE): as a shell pipeline, nothing to write to
    if (pending_.empty() && !writing_) progress_ = std::chrono::steady_clock::now();
    pending_ += text;
  }
  cv_.notify_all();
}

bool Writer::Full() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.size() > kMaxBuffered;
}

bool Writer::Drained(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, wait, [&] { return broken_ || (pending_.empty() && !writing_); });
}

std::chrono::milliseconds Writer::Stalled() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_ || (pending_.empty() && !writing_)) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - progress_);
}

void Writer::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !pending_.empty(); });
    if (pending_.empty()) return;  // stopping, all written
    std::string chunk;
    chunk.swap(pending_);
    writing_ = true;
    lock.unlock();
    size_t off = 0;
    bool broken = false;
    while (off < chunk.size()) {
      ssize_t n = ::write(fd_, chunk.data() + off, chunk.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        broken = true;
        break;
      }
      off += static_cast<size_t>(n);
      std::lock_guard<std::mutex> l(mu_);
      progress_ = std::chrono::steady_clock::now();
    }
    lock.lock();
    writing_ = false;
    broken_ |= broken;
    if (broken_) pending_.clear();
    cv_.notify_all();
  }
}

std::string StampLines(const std::string& lines) {
  if (lines.empty()) return lines;
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const int ms =
      static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  ::localtime_r(&secs, &tm);
  char stamp[40];
  const size_t n = std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
  std::snprintf(stamp + n, sizeof stamp - n, ".%03d ", ms);
  std::string out;
  out.reserve(lines.size() + 32);
  for (size_t start = 0; start < lines.size();) {
    size_t nl = lines.find('\n', start);
    const size_t end = nl == std::string::npos ? lines.size() : nl + 1;
    out += stamp;
    out.append(lines, start, end - start);
    start = end;
  }
  return out;
}

}  // namespace hoop::run
