#include "transport/handshake.h"

#include <cstring>
#include <vector>

#include "transport/socket.h"

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
  WireHello w{kMagic, kVersion, static_cast<uint32_t>(hello.kind), hello.rank,
              static_cast<uint32_t>(token.size()), static_cast<uint32_t>(hello.comm.size())};
  std::string buf(reinterpret_cast<const char*>(&w), sizeof(w));
  buf += token;
  buf += hello.comm;
  HOOP_RETURN_IF_ERROR(SendAll(fd, buf.data(), buf.size(), deadline));
  uint32_t answer = 0;
  Status s = RecvAll(fd, &answer, sizeof(answer), deadline);
  if (!s.ok() || answer == kRefused)
    return PermissionDenied("connection refused by " + PeerName(fd) +
                            " (wrong job token or wrong kind of connection; is HOOP_JOB_TOKEN the job's?)");
  if (answer != kAccepted) return Unavailable("bad handshake answer from " + PeerName(fd));
  return Status::Ok();
}

StatusOr<Hello> AcceptHello(int fd, const std::string& token, HelloKind expected, Deadline deadline) {
  WireHello w{};
  HOOP_RETURN_IF_ERROR(RecvAll(fd, &w, sizeof(w), deadline));
  auto refuse = [&](const std::string& why) -> Status {
    uint32_t no = kRefused;
    (void)SendAll(fd, &no, sizeof(no), deadline);
    return PermissionDenied(why);
  };
  if (w.magic != kMagic) return refuse("not a hoop client (bad magic)");
  if (w.version != kVersion) return refuse("protocol version " + std::to_string(w.version) + " unsupported");
  if (w.token_len > kMaxField || w.comm_len > kMaxField) return refuse("oversized hello");
  std::string got(w.token_len, '\0'), comm(w.comm_len, '\0');
  HOOP_RETURN_IF_ERROR(RecvAll(fd, got.data(), got.size(), deadline));
  HOOP_RETURN_IF_ERROR(RecvAll(fd, comm.data(), comm.size(), deadline));
  if (!SameSecret(got, token)) return refuse("wrong job token");
  if (w.kind != static_cast<uint32_t>(expected)) return refuse("wrong kind of connection");
  uint32_t yes = kAccepted;
  HOOP_RETURN_IF_ERROR(SendAll(fd, &yes, sizeof(yes), deadline));
  Hello h;
  h.kind = static_cast<HelloKind>(w.kind);
  h.rank = w.rank;
  h.comm = comm;
  return h;
}

}  // namespace hoop
