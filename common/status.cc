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
    case Code::kRevoked: return "Revoked";
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

std::string Escaped(const std::string& text) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != 0x7f) {
      out.push_back(ch);
    } else if (c == '\n') {
      out.append("\\n");
    } else if (c == '\t') {
      out.append("\\t");
    } else if (c == '\r') {
      out.append("\\r");
    } else {
      out.append("\\x");
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

}  // namespace hoop
