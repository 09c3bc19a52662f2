#include "transport/util/handshake.h"

#include <cstring>
#include <vector>

#include "transport/util/socket.h"

namespace hoop {
namespace {
constexpr uint32_t kMagic = 0x484f4f50;  // "HOOP"
constexpr uint32_t kVersion = 1;
constexpr uint32_t kAccepted = 0x4f4b4159;  // "OKAY"
constexpr uint32_t kRefused = 0x4e4f5045;   // "NOPE"
constexpr uint32_t kMaxField = 4096;

struct WireHello {
  uint32_t magic, version, kind;
  int32_t rank;
  uint32_t token_len, comm_len;
};

// Constant-time comparison, so the time to refuse leaks nothing about the token.
bool SameSecret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}
}  // namespace

Status SendHello(int fd, const std::string& token, const Hello& hello, Deadline deadline) {
  WireHello w{kMagic,
              kVersion,
              static_cast<uint32_t>(hello.kind),
              hello.rank,
              static_cast<uint32_t>(token.size()),
              static_cast<uint32_t>(hello.comm.size())};
  std::string buf(reinterpret_cast<const char*>(&w), sizeof(w));
  buf += token;
  buf += hello.comm;
  const std::string who = PeerName(fd);
  Status sent = SendAll(fd, buf.data(), buf.size(), deadline);
  if (!sent.ok()) return Status(sent.code(), "sending the hello to " + who + ": " + sent.message());
  uint32_t answer = 0;
  Status s = RecvAll(fd, &answer, sizeof(answer), deadline);
  // Only an explicit "refused" means the token (or the kind of connection) was wrong; silence
  // and a closed connection are something else and say so.
  if (s.code() == Code::kDeadlineExceeded)
    return DeadlineExceeded("no answer to the hello from " + who +
                            " before the deadline (is it overloaded, or stopped?)");
  if (!s.ok()) return Unavailable("no answer to the hello from " + who + ": " + s.message());
  if (answer == kRefused)
    return PermissionDenied("connection refused by " + who +
                            " (wrong job token or wrong kind of connection; is HOOP_JOB_TOKEN the job's?)");
  if (answer != kAccepted) return Unavailable("bad handshake answer from " + who);
  return Status::Ok();
}

namespace {
// Checks a complete hello; empty string: accepted, else why not.
std::string CheckHello(const WireHello& w, const std::string& got, const std::string& token, HelloKind expected) {
  if (!SameSecret(got, token)) return "wrong job token";
  if (w.kind != static_cast<uint32_t>(expected)) return "wrong kind of connection";
  return "";
}
// Checks the fixed part; empty string: plausible so far.
std::string CheckHeader(const WireHello& w) {
  if (w.magic != kMagic) return "not a hoop client (bad magic)";
  if (w.version != kVersion) return "protocol version " + std::to_string(w.version) + " unsupported";
  if (w.token_len > kMaxField || w.comm_len > kMaxField) return "oversized hello";
  return "";
}
Hello MakeHello(const WireHello& w, std::string comm) {
  Hello h;
  h.kind = static_cast<HelloKind>(w.kind);
  h.rank = w.rank;
  h.comm = std::move(comm);
  return h;
}
}  // namespace

std::string HelloAnswer(bool accepted) {
  uint32_t word = accepted ? kAccepted : kRefused;
  return std::string(reinterpret_cast<const char*>(&word), sizeof(word));
}

HelloVerdict ParseHello(const std::string& buf, const std::string& token, HelloKind expected, Hello* hello,
                        size_t* consumed, std::string* why) {
  if (buf.size() < sizeof(WireHello)) return HelloVerdict::kNeedMore;
  WireHello w;
  std::memcpy(&w, buf.data(), sizeof(w));
  *why = CheckHeader(w);
  if (!why->empty()) return HelloVerdict::kRefused;
  size_t total = sizeof(w) + w.token_len + w.comm_len;
  if (buf.size() < total) return HelloVerdict::kNeedMore;
  *consumed = total;
  *why = CheckHello(w, buf.substr(sizeof(w), w.token_len), token, expected);
  if (!why->empty()) return HelloVerdict::kRefused;
  *hello = MakeHello(w, buf.substr(sizeof(w) + w.token_len, w.comm_len));
  return HelloVerdict::kAccepted;
}

}  // namespace hoop
