// libFuzzer target: the TCP back end's frame reader (transport/tcp/connection.h), fed what a
// confused or hostile peer could put on the stream. The first bytes choose the receives posted
// (how many, their lengths and check words) and whether the peer closes its end; the rest is the
// stream. Whatever arrives must end as completions (data, or an error naming the peer), never a
// crash, a hang or a read past a buffer.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "transport/tcp/connection.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int posts = data[0] % 5;
  const bool close_after = data[0] & 0x80;
  const uint8_t sizes = data[1];
  data += 2;
  size -= 2;
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) return 0;
  {
    hoop::Connection conn(3, hoop::Fd(sv[0]), "fuzz-peer");
    std::vector<std::vector<char>> bufs(static_cast<size_t>(posts));
    for (int i = 0; i < posts; ++i) {
      // Lengths 0, 1, 7, 64 or 4096; tags 0..3; check words 0 or 7 (the peer may send either).
      static const size_t kLens[] = {0, 1, 7, 64, 4096};
      const size_t len = kLens[(sizes >> i) % 5];
      bufs[static_cast<size_t>(i)].resize(len + 1);
      conn.PostRecv(hoop::Region{bufs[static_cast<size_t>(i)].data(), len + 1}, 0, len,
                    hoop::Tag{static_cast<uint64_t>(i), (sizes & (1u << i)) ? 7u : 0u}, static_cast<uint64_t>(i));
    }
    size_t off = 0;
    std::vector<hoop::Completion> out;
    for (int round = 0; round < 64; ++round) {
      if (off < size) {
        ssize_t n = ::write(sv[1], data + off, size - off);
        if (n > 0) off += static_cast<size_t>(n);
      } else if (close_after) {
        ::shutdown(sv[1], SHUT_WR);
      }
      conn.OnEvents(0x001 | 0x004);  // EPOLLIN | EPOLLOUT
      conn.Progress(&out);
      if (conn.failed() && off >= size) break;
    }
    // Every completion names this peer and a posted operation.
    for (const hoop::Completion& c : out)
      if (c.peer != 3 || c.op_id >= static_cast<uint64_t>(posts)) __builtin_trap();
  }
  ::close(sv[1]);
  return 0;
}
