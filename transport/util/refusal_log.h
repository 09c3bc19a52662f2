// Refused connections, logged without flooding: a stranger that connects thousands of times a
// second (a port scanner, a misconfigured job) once wrote one WARN line per connection (73,369
// lines in 12 s). The first kBurst refusals of each kInterval are said in full; the rest of that
// interval are counted and said as one line, with the latest cause, when the next refusal comes
// after it, or when the log goes (the server stops).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace hoop {

class RefusalLog {
 public:
  static constexpr int kBurst = 10;
  static constexpr auto kInterval = std::chrono::seconds(10);

  explicit RefusalLog(std::string who) : who_(std::move(who)) {}  // "store", "tcp"
  ~RefusalLog();
  RefusalLog(const RefusalLog&) = delete;
  RefusalLog& operator=(const RefusalLog&) = delete;

  // One refused connection from `from` (an address), and why.
  void Refused(const std::string& from, const std::string& why);

 private:
  void SayHeld();  // holds mu_

  std::string who_;
  std::mutex mu_;
  std::chrono::steady_clock::time_point start_{};
  int said_ = 0;       // in full, this interval
  uint64_t held_ = 0;  // counted only, since the last summary
  std::string last_;   // the latest held one: "ADDRESS: why"
};

}  // namespace hoop
