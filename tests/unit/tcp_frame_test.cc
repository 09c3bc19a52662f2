// The TCP back end's frame reader (transport/tcp/connection.h) fed raw bytes over a socketpair, as
// a confused or hostile peer would send them: frames of unknown kinds are refused naming the
// peer, an abort notice's control characters are escaped, a corrupt header is named.
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "transport/tcp/connection.h"

using namespace hoop;

namespace {

struct WireHeader {  // connection.h's wire format: 32 bytes, then the payload
  uint32_t magic = 0x48505431;
  uint32_t kind = 1;  // 1 data, 2 abort
  uint64_t tag = 0;
  uint64_t len = 0;
  uint64_t check = 0;
};

// A Connection on one end of a socketpair, the test's raw bytes on the other.
struct Pair {
  int raw = -1;
  std::unique_ptr<Connection> conn;
  Pair() {
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
    raw = sv[1];
    conn = std::make_unique<Connection>(7, Fd(sv[0]), "test-peer");
  }
  ~Pair() { ::close(raw); }
  void Send(const WireHeader& h, const std::string& payload = "") {
    std::string bytes(reinterpret_cast<const char*>(&h), sizeof h);
    bytes += payload;
    REQUIRE(::write(raw, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  }
  // Posts a receive of `len` bytes for tag 5 and progresses until it completes.
  Completion Receive(size_t len) {
    static char buf[64];
    conn->PostRecv(Region{buf, sizeof buf}, 0, len, Tag{5, 9}, 42);
    std::vector<Completion> out;
    for (int i = 0; i < 100 && out.empty(); ++i) {
      conn->OnEvents(0x001 /* EPOLLIN */);
      conn->Progress(&out);
    }
    REQUIRE(out.size() == 1);
    return out[0];
  }
};

}  // namespace

TEST_CASE("a well-formed data frame lands in the posted receive", "[tcp_frame]") {
  Pair p;
  WireHeader h;
  h.tag = 5;
  h.len = 3;
  h.check = 9;
  p.Send(h, "abc");
  Completion c = p.Receive(3);
  CHECK(c.status.ok());
  CHECK(c.op_id == 42);
}

TEST_CASE("a frame of an unknown kind is refused, naming the peer", "[tcp_frame]") {
  Pair p;
  WireHeader h;
  h.kind = 7;
  h.tag = 5;
  h.len = 3;
  h.check = 9;
  p.Send(h, "abc");
  Completion c = p.Receive(3);
  CHECK_FALSE(c.status.ok());
  CHECK(c.status.message().find("peer 7") != std::string::npos);
  CHECK(c.status.message().find("unknown kind 7") != std::string::npos);
}

TEST_CASE("an abort notice's control characters are escaped", "[tcp_frame]") {
  Pair p;
  const std::string cause = "bad\n[3] hoop[rank 3] ERROR: forged line\x1b[2J";
  WireHeader h;
  h.kind = 2;
  h.len = cause.size();
  p.Send(h, cause);
  Completion c = p.Receive(3);
  CHECK(c.status.code() == Code::kAborted);
  CHECK(c.status.message() == "rank 7 aborted: bad\\n[3] hoop[rank 3] ERROR: forged line\\x1b[2J");
}

TEST_CASE("a corrupt header is named as such", "[tcp_frame]") {
  Pair p;
  WireHeader h;
  h.magic = 0xdeadbeef;
  p.Send(h);
  Completion c = p.Receive(3);
  CHECK(c.status.message().find("corrupt frame") != std::string::npos);
}

TEST_CASE("a connection that ends inside an abort notice completes only the posted receives", "[tcp_frame]") {
  // Found by fuzz/fuzz_tcp_frames.cc: the abort frame being read was reported as a completion
  // of operation 0, which nobody had posted.
  Pair p;
  WireHeader h;
  h.kind = 2;
  h.len = 100;
  p.Send(h, "only ten b");
  ::shutdown(p.raw, SHUT_WR);
  static char buf[8];
  p.conn->PostRecv(Region{buf, sizeof buf}, 0, 8, Tag{5, 9}, 42);
  std::vector<Completion> out;
  for (int i = 0; i < 20; ++i) {
    p.conn->OnEvents(0x001);
    p.conn->Progress(&out);
  }
  REQUIRE(out.size() == 1);
  CHECK(out[0].op_id == 42);
  CHECK(out[0].status.code() == Code::kUnavailable);
}
