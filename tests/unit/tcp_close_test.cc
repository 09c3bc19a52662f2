// The TCP back end's orderly end (transport/tcp/close.cc) on a real loopback connection: a
// Connection on one end, the test's raw socket as the peer on the other. A peer that finished
// (its FIN) and closed before our last frame came resets the connection: that frame is not
// waited for until HOOP_TIMEOUT (it was, and finalize failed now and then on a busy machine).
// A live peer that has our bytes still to take (its window shut) is waited for; once it finished
// (its FIN) it is not, and the bytes still arrive after our close.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "transport/tcp/connection.h"

using namespace hoop;

namespace {

constexpr uint32_t kEpollOut = 0x004;

// A Connection (peer 7) on the accepted end of a loopback connection; `raw` is the peer's end.
struct LoopbackPair {
  int raw = -1;
  std::unique_ptr<Connection> conn;
  explicit LoopbackPair(int small_buffers = 0) {
    const int lis = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(lis >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    REQUIRE(::bind(lis, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(lis, 1) == 0);
    REQUIRE(::getsockname(lis, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    raw = ::socket(AF_INET, SOCK_STREAM, 0);
    if (small_buffers > 0) ::setsockopt(raw, SOL_SOCKET, SO_RCVBUF, &small_buffers, sizeof small_buffers);
    REQUIRE(::connect(raw, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    const int fd = ::accept4(lis, nullptr, nullptr, SOCK_NONBLOCK);
    REQUIRE(fd >= 0);
    ::close(lis);
    if (small_buffers > 0) ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small_buffers, sizeof small_buffers);
    conn = std::make_unique<Connection>(7, Fd(fd), "test-peer");
  }
  ~LoopbackPair() {
    if (raw >= 0) ::close(raw);
  }
  void Send(std::vector<char>& payload) {
    conn->PostSend(Region{payload.data(), payload.size()}, 0, payload.size(), Tag{5, 9}, 42);
    std::vector<Completion> out;
    for (int i = 0; i < 10; ++i) {
      conn->OnEvents(kEpollOut);
      conn->Progress(&out);
    }
  }
  // Delivered, asked until it says true or `limit` passes; `why` is its last word.
  bool DeliveredWithin(std::chrono::milliseconds limit, std::string* why) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (true) {
      why->clear();
      if (conn->Delivered(why)) return true;
      if (std::chrono::steady_clock::now() > end) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
};

}  // namespace

TEST_CASE("a frame that reaches a peer which finished and closed is not waited for", "[tcp_close]") {
  LoopbackPair p;
  // The peer's own Close: its FIN, then close with nothing unread.
  REQUIRE(::shutdown(p.raw, SHUT_WR) == 0);
  ::close(p.raw);
  p.raw = -1;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // Then our last frame (a goodbye or a credit, in a job) meets its closed socket: a reset.
  std::vector<char> frame(64, 'x');
  p.Send(frame);
  REQUIRE_FALSE(p.conn->HasPendingSends());
  p.conn->CloseWrite();
  std::string why;
  CHECK(p.DeliveredWithin(std::chrono::seconds(5), &why));
  CHECK(why.empty());
}

TEST_CASE("bytes a live peer has not taken are waited for; once it finished, not, and they still arrive",
          "[tcp_close]") {
  LoopbackPair p(4096);
  std::vector<char> big(2 << 20, 'y');
  p.Send(big);  // more than the small buffers take: the peer's window shuts
  // The peer has not finished (no FIN): what it has not taken is waited for, and named.
  std::string why;
  CHECK_FALSE(p.DeliveredWithin(std::chrono::milliseconds(200), &why));
  CHECK(why.find("peer 7 (test-peer) has not taken") != std::string::npos);
  // It finishes (its own Close: every call of its done, so it needs none of these bytes): no
  // more waiting, and no error, though they are not acknowledged yet.
  REQUIRE(::shutdown(p.raw, SHUT_WR) == 0);
  CHECK(p.DeliveredWithin(std::chrono::seconds(5), &why));
  CHECK(why.empty());
  // Still, nothing is thrown away: the peer reads on, the rest goes out, our socket is closed,
  // and every byte arrives before the peer's end of stream.
  std::vector<char> sink(1 << 16);
  size_t got = 0;
  bool eof = false;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::vector<Completion> out;
  while (!eof && std::chrono::steady_clock::now() < end) {
    const ssize_t n = ::recv(p.raw, sink.data(), sink.size(), MSG_DONTWAIT);
    if (n > 0) got += static_cast<size_t>(n);
    eof = n == 0;
    if (p.conn && !p.conn->HasPendingSends()) p.conn.reset();  // closes our end, bytes still in the kernel
    if (p.conn) {
      p.conn->OnEvents(kEpollOut);
      p.conn->Progress(&out);
    }
  }
  CHECK(eof);
  CHECK(got == big.size() + 32);  // the header and the payload
}
