#include "tensorfusion/timeline.h"

#include <cerrno>

#include "common/json_text.h"

namespace hoop::fusion {

Timeline::~Timeline() { Close(); }

Status Timeline::Open(const std::string& path, int rank, bool mark_cycles) {
  Close();
  if (path.empty() || rank != 0) return Status::Ok();
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) return ErrnoStatus(Code::kInvalidArgument, "timeline: cannot write " + path, errno);
  pid_ = rank;
  mark_cycles_ = mark_cycles;
  wrote_ = dirty_ = false;
  rows_.clear();
  origin_ = Clock::now();
  std::fputs("[\n", file_);
  return Status::Ok();
}

void Timeline::MarkCycle(Clock::time_point t) {
  if (!file_ || !mark_cycles_) return;
  std::fprintf(file_, "%s{\"name\":\"CYCLE_START\",\"ph\":\"i\",\"s\":\"g\",\"pid\":%d,\"tid\":0,\"ts\":%.3f}",
               wrote_ ? ",\n" : "", pid_, Micros(t));
  wrote_ = dirty_ = true;
}

double Timeline::Micros(Clock::time_point t) const {
  return std::chrono::duration<double, std::micro>(t - origin_).count();
}

int Timeline::Row(const std::string& tensor) {
  auto [it, fresh] = rows_.try_emplace(tensor, static_cast<int>(rows_.size()) + 1);
  if (fresh) {
    std::fprintf(file_, "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":%s}}",
                 wrote_ ? ",\n" : "", pid_, it->second, JsonQuoted(tensor).c_str());
    wrote_ = true;
  }
  return it->second;
}

void Timeline::Span(const std::string& tensor, const char* phase, Clock::time_point start, Clock::time_point end,
                    const std::string& args) {
  if (!file_) return;
  int tid = Row(tensor);
  std::fprintf(file_, ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{%s}}",
               phase, pid_, tid, Micros(start), Micros(end) - Micros(start), args.c_str());
  dirty_ = true;
}

void Timeline::Flush() {
  if (file_ && dirty_) std::fflush(file_);
  dirty_ = false;
}

void Timeline::Close() {
  if (!file_) return;
  std::fputs("\n]\n", file_);
  std::fclose(file_);
  file_ = nullptr;
}

}  // namespace hoop::fusion
