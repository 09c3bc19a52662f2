// libFuzzer target: the rendezvous store's protocol (transport/store/tcp_store.h), from the side a
// stranger or a broken client reaches. One server runs for the whole fuzzing session; every input
// is one connection's bytes: a hello (a valid one first when the first byte says so, so the
// requests behind it are read) and then whatever follows. The server must answer, refuse or drop
// the connection, never crash, spin or let memory grow without bound. The hello parser the TCP
// back end's doorman shares (transport/util/handshake.h) is fed the same bytes directly.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <memory>

#include "transport/store/tcp_store.h"
#include "transport/util/handshake.h"

namespace {
const char kToken[] = "fuzz-token";

hoop::TcpStoreServer& Server() {
  static std::unique_ptr<hoop::TcpStoreServer> server = [] {
    auto s = hoop::TcpStoreServer::Start("127.0.0.1", 0, kToken);
    if (!s.ok()) __builtin_trap();
    return std::move(s).value();
  }();
  return *server;
}

// A valid store-client hello, as TcpStoreClient sends it.
std::string ValidHello() {
  struct {
    uint32_t magic = 0x484f4f50, version = 1, kind = 1;
    int32_t rank = -1;
    uint32_t token_len = sizeof(kToken) - 1, comm_len = 0;
  } w;
  return std::string(reinterpret_cast<const char*>(&w), sizeof w) + kToken;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool hello_first = data[0] & 1;
  std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);

  // The hello parser alone.
  hoop::Hello h;
  size_t used = 0;
  std::string why;
  for (auto kind : {hoop::HelloKind::kStoreClient, hoop::HelloKind::kPeer}) {
    hoop::HelloVerdict v = hoop::ParseHello(bytes, kToken, kind, &h, &used, &why);
    if (v == hoop::HelloVerdict::kAccepted && used > bytes.size()) __builtin_trap();
    if (v == hoop::HelloVerdict::kRefused && why.empty()) __builtin_trap();
  }

  // The server, over a real connection.
  auto fd = hoop::ConnectRetry({"127.0.0.1", Server().port()}, hoop::Deadline::After(std::chrono::seconds(2)));
  if (!fd.ok()) __builtin_trap();
  std::string wire = (hello_first ? ValidHello() : std::string()) + bytes;
  (void)hoop::SendAll(fd->get(), wire.data(), wire.size(), hoop::Deadline::After(std::chrono::milliseconds(200)));
  ::shutdown(fd->get(), SHUT_WR);
  // Read what the server answers until it closes, or briefly (a parked Get waits for its key).
  char buf[4096];
  for (int i = 0; i < 20; ++i) {
    pollfd p{fd->get(), POLLIN, 0};
    if (::poll(&p, 1, 5) <= 0) break;
    if (::recv(fd->get(), buf, sizeof buf, MSG_DONTWAIT) <= 0) break;
  }
  return 0;
}
