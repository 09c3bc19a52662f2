// Status and StatusOr: every fallible call in hoop returns one of these. No exception crosses a
// layer boundary or the C API. A Status carries a code (what kind of failure, so callers and the
// C API can map it) and a message written for a person: it names rank, operation and cause.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace hoop {

enum class Code {
  kOk = 0,
  kInvalidArgument,     // the caller passed something wrong (bad count, dtype, root...)
  kUnavailable,         // a peer or server went away
  kDeadlineExceeded,    // a wait ran past its deadline
  kAborted,             // the communicator was poisoned by an earlier failure
  kFailedPrecondition,  // ranks disagree (mismatched collectives), or wrong state
  kPermissionDenied,    // wrong job token
  kUnimplemented,       // e.g. CUDA memory before the CUDA back end lands
  kNotFound,
  kInternal,
  kRevoked,  // a rank revoked the communicator (Communicator::Revoke): every call on it fails
};

const char* CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "Unavailable: lost peer 2 ..."
  std::string ToString() const;
  // Same code, message prefixed with "context: ".
  Status WithContext(const std::string& context) const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
inline Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
inline Status DeadlineExceeded(std::string m) { return {Code::kDeadlineExceeded, std::move(m)}; }
inline Status Aborted(std::string m) { return {Code::kAborted, std::move(m)}; }
inline Status FailedPrecondition(std::string m) { return {Code::kFailedPrecondition, std::move(m)}; }
inline Status PermissionDenied(std::string m) { return {Code::kPermissionDenied, std::move(m)}; }
inline Status Unimplemented(std::string m) { return {Code::kUnimplemented, std::move(m)}; }
inline Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
inline Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }
inline Status Revoked(std::string m) { return {Code::kRevoked, std::move(m)}; }
// errno-based failure of a system call: "what: strerror(errno)".
Status ErrnoStatus(Code code, const std::string& what, int err);
// Text from elsewhere (a peer's abort cause) made safe to print: control characters, which could
// forge log lines or drive a terminal, become \n, \t, \r and \xNN.
std::string Escaped(const std::string& text);

template <class T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).ok()); }
  StatusOr(T value) : v_(std::move(value)) {}

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &std::get<T>(v_); }
  const T* operator->() const { return &std::get<T>(v_); }

 private:
  std::variant<Status, T> v_;
};

}  // namespace hoop

#define HOOP_CONCAT_INNER(a, b) a##b
#define HOOP_CONCAT(a, b) HOOP_CONCAT_INNER(a, b)

#define HOOP_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::hoop::Status hoop_status_ = (expr);        \
    if (!hoop_status_.ok()) return hoop_status_; \
  } while (0)

#define HOOP_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()

#define HOOP_ASSIGN_OR_RETURN(lhs, expr) HOOP_ASSIGN_OR_RETURN_IMPL(HOOP_CONCAT(hoop_or_, __LINE__), lhs, expr)
