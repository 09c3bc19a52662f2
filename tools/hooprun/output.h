// hooprun's output: the ranks' lines go to hooprun's stdout and stderr through a writer thread
// per stream, so a reader that stops reading (a paused pager, a stuck pipe) can never stop
// hooprun's own loop: signals, --timeout and dying ranks are still handled on time. While a
// writer holds more than kMaxBuffered bytes the loop stops reading the ranks' pipes, so a rank
// that keeps printing waits for its reader as it would without hooprun, and memory stays
// bounded. Nothing is dropped while the job runs; at the end hooprun waits for what is buffered
// to be written, except after a --timeout or an interrupt, when it waits only while the reader
// keeps taking data.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace hoop::run {

// `lines` with the wall-clock time ("2026-11-28 00:12:34.567 ") before each line's start.
std::string StampLines(const std::string& lines);

class Writer {
 public:
  static constexpr size_t kMaxBuffered = 1 << 20;
  explicit Writer(int fd);
  ~Writer();  // detaches the thread if it is still stuck in a write (see Drain)
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  void Write(std::string text);
  bool Full() const;  // more than kMaxBuffered waiting
  // Waits up to `wait` for everything to be written; true once it is (or the reader is gone).
  bool Drained(std::chrono::milliseconds wait);
  // How long the reader has taken nothing while output waited (zero when none waits).
  std::chrono::milliseconds Stalled() const;

 private:
  void Loop();

  int fd_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string pending_;
  bool writing_ = false, stop_ = false, broken_ = false;
  std::chrono::steady_clock::time_point progress_;
  std::thread thread_;
};

}  // namespace hoop::run
