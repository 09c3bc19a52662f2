// loopback-limit: what plain TCP over loopback carries in both directions at once on this
// machine - the streaming ceiling for any TCP transport here. Two processes joined by one socket
// each send SIZE bytes and receive SIZE bytes at the same time (one thread, non-blocking, poll,
// 4 MiB calls, autotuned socket buffers like hoop's). Prints the per-direction rate.
//   usage: loopback-limit [SIZE_MB (default 1024)] [REPEATS (default 3)]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "perf/limit_args.h"

namespace {
void Die(const char* what) {
  std::perror(what);
  std::exit(1);
}
void Tune(int fd) {
  int one = 1;  // buffers left to autotuning, as hoop leaves them
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}
// One thread per process, a non-blocking socket, poll(): send and receive at once, as a
// single-threaded transport does. (A sender and a receiver thread per process measured slower
// on 2 cores: four busy threads share them.)
double Exchange(int fd, size_t bytes) {
  // 4 MiB per call: the fastest of 64 KiB to 64 MiB here (64 KiB 1.33, 1 MiB 1.75-1.82, 4 MiB
  // 2.46-2.49, 16 MiB 2.19, 64 MiB 2.10 GB/s per direction).
  const size_t call = 4 << 20;
  std::vector<char> out(call, 1), in(call);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  auto t0 = std::chrono::steady_clock::now();
  size_t to_send = bytes, to_recv = bytes;
  while (to_send > 0 || to_recv > 0) {
    pollfd p{fd, static_cast<short>((to_send ? POLLOUT : 0) | (to_recv ? POLLIN : 0)), 0};
    if (poll(&p, 1, 10000) <= 0) Die("poll");
    if (to_send && (p.revents & POLLOUT)) {
      ssize_t n = send(fd, out.data(), std::min(to_send, out.size()), MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN) Die("send");
      if (n > 0) to_send -= static_cast<size_t>(n);
    }
    if (to_recv && (p.revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t n = recv(fd, in.data(), std::min(to_recv, in.size()), 0);
      if (n == 0 || (n < 0 && errno != EAGAIN)) Die("recv");
      if (n > 0) to_recv -= static_cast<size_t>(n);
    }
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int main(int argc, char** argv) {
  long long size_mb = 1024, repeats_arg = 3;
  const int rc = hoop::perf::ParseLimitArgs(
      argc, argv, "loopback-limit",
      "usage: loopback-limit [SIZE_MB (default 1024)] [REPEATS (default 3)] | --version\n"
      "Streams SIZE_MB both ways at once between two processes over TCP loopback and prints\n"
      "the per-direction rate of each repeat and their median.",
      {{"SIZE_MB", &size_mb, 1, 65536}, {"REPEATS", &repeats_arg, 1, 1000}});
  if (rc >= 0) return rc;
  const size_t mb = static_cast<size_t>(size_mb);
  const int repeats = static_cast<int>(repeats_arg);
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (lfd < 0 || bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(lfd, 1) != 0) Die("listen");
  socklen_t len = sizeof(a);
  getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    Tune(fd);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) Die("connect");
    for (int r = 0; r < repeats; ++r) Exchange(fd, mb << 20);
    _exit(0);
  }
  int fd = accept(lfd, nullptr, nullptr);
  if (fd < 0) Die("accept");
  Tune(fd);
  std::vector<double> rates;
  for (int r = 0; r < repeats; ++r) {
    double s = Exchange(fd, mb << 20);
    rates.push_back(static_cast<double>(mb << 20) / s / 1e9);
    std::printf("loopback-limit: %zu MiB each way in %.3f s: %.3f GB/s per direction\n", mb, s, rates.back());
  }
  waitpid(pid, nullptr, 0);
  std::sort(rates.begin(), rates.end());
  std::printf("loopback-limit: median %.3f GB/s per direction\n", rates[rates.size() / 2]);
  return 0;
}
