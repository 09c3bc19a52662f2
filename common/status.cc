#include "common/status.h"

#include <cstring>

namespace hoop {

const char* CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kInvalidArgument: return "InvalidArgument";
    case Code::kUnavailable: return "Unavailable";
    case Code::kDeadlineExceeded: return "DeadlineExceeded";
    case Code::kAborted: return "Aborted";
    case Code::kFailedPrecondition: return "FailedPrecondition";
    case Code::kPermissionDenied: return "PermissionDenied";
    case Code::kUnimplemented: return "Unimplemented";
    case Code::kNotFound: return "NotFound";
    case Code::kInternal: return "Internal";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

Status ErrnoStatus(Code code, const std::string& what, int err) {
  return Status(code, what + ": " + std::strerror(err));
}

}  // namespace hoop
