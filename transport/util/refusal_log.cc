#include "transport/util/refusal_log.h"

#include "common/logging.h"

namespace hoop {

RefusalLog::~RefusalLog() {
  std::lock_guard<std::mutex> lock(mu_);
  SayHeld();
}

void RefusalLog::Refused(const std::string& from, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (now - start_ >= kInterval) {
    SayHeld();
    start_ = now;
    said_ = 0;
  }
  if (said_ < kBurst) {
    ++said_;
    HOOP_LOG(kWarn, who_ << ": refused connection from " << from << ": " << why);
    return;
  }
  ++held_;
  last_ = from + ": " + why;
}

void RefusalLog::SayHeld() {
  if (held_ == 0) return;
  HOOP_LOG(kWarn, who_ << ": refused " << held_ << " more connection(s) within "
                       << std::chrono::duration_cast<std::chrono::seconds>(kInterval).count()
                       << " s of a burst (only the first " << kBurst << " of each are said; the latest from " << last_
                       << ")");
  held_ = 0;
}

}  // namespace hoop
