#include "transport/tcp/doorman.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "common/logging.h"
#include "transport/util/handshake.h"

namespace hoop {
namespace {
constexpr auto kHelloTime = std::chrono::seconds(5);
}  // namespace

Doorman::Doorman(int listen_fd, std::string token, std::string comm, int rank, int size)
    : listen_fd_(listen_fd),
      token_(std::move(token)),
      comm_(std::move(comm)),
      rank_(rank),
      size_(size),
      reserve_(OpenReserve()) {}

void Doorman::Refuse(Caller& c, const std::string& why) {
  ++refused_;
  refusals_.Refused(c.address, why);
  std::string no = HelloAnswer(false);
  (void)::send(c.fd.get(), no.data(), no.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

bool Doorman::Read(Caller& c, bool admitting, std::vector<Admitted>* admitted) {
  char buf[4096];
  bool closed = false;
  while (c.in.size() <= 16384) {  // no hello is this long: ParseHello refuses it below
    ssize_t n = ::recv(c.fd.get(), buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      c.in.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    closed = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
    break;
  }
  Hello hello;
  size_t used = 0;
  std::string why;
  HelloVerdict v = ParseHello(c.in, token_, HelloKind::kPeer, &hello, &used, &why);
  if (v == HelloVerdict::kNeedMore && closed) {
    ++refused_;
    HOOP_LOG(kWarn, "tcp: connection from " << c.address << " closed before it finished its hello");
    return true;
  }
  if (v == HelloVerdict::kNeedMore) return false;
  if (v == HelloVerdict::kRefused) {
    Refuse(c, why);
    return true;
  }
  if (!admitting) {
    Refuse(c, "rank " + std::to_string(hello.rank) + " of communicator '" + hello.comm +
                  "' came after start-up (every connection of this communicator is made)");
    return true;
  }
  const bool known = std::find(admitted_ranks_.begin(), admitted_ranks_.end(), hello.rank) != admitted_ranks_.end();
  if (hello.comm != comm_ || hello.rank < 0 || hello.rank >= rank_ || hello.rank >= size_ || known) {
    Refuse(c, "claims rank " + std::to_string(hello.rank) + " of communicator '" + hello.comm + "'" +
                  (known ? " (that rank is connected already)" : ""));
    return true;
  }
  std::string yes = HelloAnswer(true);
  if (!SendAll(c.fd.get(), yes.data(), yes.size(), Deadline::After(std::chrono::seconds(1))).ok()) {
    HOOP_LOG(kWarn, "tcp: rank " << hello.rank << " at " << c.address << " left during its hello");
    return true;
  }
  admitted_ranks_.push_back(hello.rank);
  admitted->push_back({hello.rank, std::move(c.fd), c.address});
  return true;
}

void Doorman::Serve(bool admitting, std::vector<Admitted>* admitted) {
  while (true) {
    std::string from;
    auto fd = AcceptWaiting(listen_fd_, &from, &reserve_);
    if (!fd.ok()) {
      HOOP_LOG(kWarn, "tcp: " << fd.status().message());
      break;
    }
    if (!fd->valid()) break;
    callers_.push_back({std::move(fd).value(), from, "", std::chrono::steady_clock::now() + kHelloTime});
  }
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(callers_, [&](Caller& c) {
    if (Read(c, admitting, admitted)) return true;
    if (now < c.hello_by) return false;
    Refuse(c, "no hello within 5 s");
    return true;
  });
}

std::vector<int> Doorman::Watched() const {
  std::vector<int> fds{listen_fd_};
  for (const Caller& c : callers_) fds.push_back(c.fd.get());
  return fds;
}

int Doorman::NextExpiryMs(int cap) const {
  const auto now = std::chrono::steady_clock::now();
  int ms = cap;
  for (const Caller& c : callers_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(c.hello_by - now).count();
    ms = std::min<int>(ms, static_cast<int>(std::max<long long>(left, 0)));
  }
  return ms;
}

}  // namespace hoop
