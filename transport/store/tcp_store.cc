#include "transport/store/tcp_store.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "common/logging.h"
#include "transport/store/file_store.h"
#include "transport/store/memory_store.h"
#include "transport/util/handshake.h"

namespace hoop {
namespace {
enum Op : uint8_t { kSet = 1, kGet = 2, kAdd = 3, kSetIfAbsent = 4 };
enum Reply : uint8_t { kOk = 0, kTimeout = 1, kBad = 2 };
#pragma pack(push, 1)
struct ReqHeader {
  uint8_t op;
  uint32_t key_len;
  uint64_t arg;
};
struct RespHeader {
  uint8_t status;
  uint64_t len;
};
#pragma pack(pop)
constexpr uint64_t kMaxValue = 64ull << 20;
constexpr uint64_t kMaxWaitMs = uint64_t{7} * 24 * 3600 * 1000;  // a Get parks a week at most
constexpr uint32_t kMaxKey = 4096;
}  // namespace

struct TcpStoreServer::Client {
  Fd fd;
  std::string in;
  std::string peer;
  bool authenticated = false;
  Deadline hello_by = Deadline::After(std::chrono::seconds(5));  // strangers do not linger
};
struct TcpStoreServer::Parked {
  int fd;
  std::string key;
  Deadline deadline;
};

StatusOr<std::unique_ptr<TcpStoreServer>> TcpStoreServer::Start(const std::string& host, int port,
                                                                const std::string& token) {
  int bound = 0;
  HOOP_ASSIGN_OR_RETURN(Fd lfd, Listen(host, port, &bound));
  Fd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake.valid()) return ErrnoStatus(Code::kInternal, "eventfd", errno);
  std::unique_ptr<TcpStoreServer> s(new TcpStoreServer(std::move(lfd), bound, token, std::move(wake)));
  s->thread_ = std::thread([p = s.get()] { p->Serve(); });
  return s;
}

TcpStoreServer::TcpStoreServer(Fd listen_fd, int port, std::string token, Fd wake)
    : listen_fd_(std::move(listen_fd)),
      port_(port),
      token_(std::move(token)),
      wake_(std::move(wake)),
      reserve_(OpenReserve()) {}

TcpStoreServer::~TcpStoreServer() {
  stop_ = true;
  uint64_t one = 1;
  ssize_t ignored = ::write(wake_.get(), &one, sizeof(one));
  (void)ignored;
  if (thread_.joinable()) thread_.join();
}

void TcpStoreServer::Reply(int fd, uint8_t status, const std::string& data) {
  RespHeader h{status, data.size()};
  std::string buf(reinterpret_cast<const char*>(&h), sizeof(h));
  buf += data;
  // Replies are small; a client that does not read them within seconds is dropped by the
  // failure of this send.
  (void)SendAll(fd, buf.data(), buf.size(), Deadline::After(std::chrono::seconds(5)));
}

void TcpStoreServer::AcceptClient() {
  // The hello is read by the poll loop like any request, so a client that connects and says
  // nothing delays no one.
  while (true) {
    std::string peer;
    auto fd = AcceptWaiting(listen_fd_.get(), &peer, &reserve_);
    if (!fd.ok()) {
      // Out of descriptors (the waiting caller was dropped through the reserve) or worse: look
      // at the listening socket again a little later rather than spin on it.
      HOOP_LOG(kWarn, "store: " << fd.status().message());
      listen_again_ = Deadline::After(std::chrono::milliseconds(100));
      return;
    }
    if (!fd->valid()) return;
    auto c = std::make_unique<Client>();
    c->fd = std::move(fd).value();
    c->peer = peer;
    clients_.push_back(std::move(c));
  }
}

bool TcpStoreServer::Refuse(Client& c, const std::string& why) {
  ++refused_;
  refusals_.Refused(c.peer, why);
  std::string no = HelloAnswer(false);
  (void)::send(c.fd.get(), no.data(), no.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  return false;
}

bool TcpStoreServer::HandleInput(Client& c) {
  char buf[65536];
  ssize_t n = ::recv(c.fd.get(), buf, sizeof(buf), MSG_DONTWAIT);
  if (n == 0) return false;
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  c.in.append(buf, static_cast<size_t>(n));
  if (!c.authenticated) {
    Hello hello;
    size_t used = 0;
    std::string why;
    HelloVerdict v = ParseHello(c.in, token_, HelloKind::kStoreClient, &hello, &used, &why);
    if (v == HelloVerdict::kNeedMore) return true;
    if (v == HelloVerdict::kRefused) return Refuse(c, why);
    c.in.erase(0, used);
    c.authenticated = true;
    std::string yes = HelloAnswer(true);
    if (!SendAll(c.fd.get(), yes.data(), yes.size(), Deadline::After(std::chrono::seconds(5))).ok()) return false;
  }
  while (c.in.size() >= sizeof(ReqHeader)) {
    ReqHeader h;
    std::memcpy(&h, c.in.data(), sizeof(h));
    const uint64_t arg = h.arg;  // out of the packed header first: no reference may bind to it
    uint64_t value_len = h.op == kSet || h.op == kSetIfAbsent ? arg : 0;
    if (h.key_len > kMaxKey || value_len > kMaxValue) return false;
    size_t need = sizeof(h) + h.key_len + value_len;
    if (c.in.size() < need) break;
    std::string key = c.in.substr(sizeof(h), h.key_len);
    std::string value = c.in.substr(sizeof(h) + h.key_len, value_len);
    c.in.erase(0, need);
    std::unique_lock<std::mutex> lock(data_mu_);  // Find() reads from other threads
    if (h.op == kSet || h.op == kSetIfAbsent) {
      auto [it, added] = data_.emplace(key, value);
      if (!added && h.op == kSet) it->second = value;
      Reply(c.fd.get(), kOk, h.op == kSet ? std::string() : it->second);
      if (!added && h.op == kSetIfAbsent) continue;
      for (auto it = parked_.begin(); it != parked_.end();) {
        if (it->key == key) {
          Reply(it->fd, kOk, value);
          it = parked_.erase(it);
        } else {
          ++it;
        }
      }
    } else if (h.op == kGet) {
      auto it = data_.find(key);
      if (it != data_.end())
        Reply(c.fd.get(), kOk, it->second);
      else
        parked_.push_back({c.fd.get(), key, Deadline::After(std::chrono::milliseconds(std::min(arg, kMaxWaitMs)))});
    } else if (h.op == kAdd) {
      auto sum = AddToCounter(data_[key], static_cast<int64_t>(arg));
      if (!sum) {
        Reply(c.fd.get(), kBad, "");
        continue;
      }
      const int64_t v = *sum;
      data_[key] = std::to_string(v);
      std::string out(reinterpret_cast<const char*>(&v), sizeof(v));
      Reply(c.fd.get(), kOk, out);
    } else {
      return false;
    }
  }
  return true;
}

void TcpStoreServer::Serve() {
  while (!stop_) {
    std::vector<pollfd> fds;
    fds.push_back({wake_.get(), POLLIN, 0});
    const bool listening = listen_again_.Expired();
    fds.push_back({listening ? listen_fd_.get() : -1, POLLIN, 0});
    for (auto& c : clients_) fds.push_back({c->fd.get(), POLLIN, 0});
    int timeout = listening ? 1000 : listen_again_.RemainingMs(1000);
    for (auto& p : parked_) timeout = std::min(timeout, p.deadline.RemainingMs());
    for (auto& c : clients_)
      if (!c->authenticated) timeout = std::min(timeout, c->hello_by.RemainingMs());
    int rc = ::poll(fds.data(), fds.size(), timeout);
    if (rc < 0 && errno != EINTR) break;
    if (rc > 0 && (fds[0].revents & POLLIN)) AnswerPut();
    // Expire parked Gets whose time is up.
    for (auto it = parked_.begin(); it != parked_.end();) {
      if (it->deadline.Expired()) {
        Reply(it->fd, kTimeout, "");
        it = parked_.erase(it);
      } else {
        ++it;
      }
    }
    std::vector<int> dropped;
    for (auto& c : clients_)
      if (!c->authenticated && c->hello_by.Expired() && !Refuse(*c, "no hello within 5 s"))
        dropped.push_back(c->fd.get());
    if (rc > 0 && (fds[1].revents & POLLIN)) AcceptClient();
    for (size_t i = 2; rc > 0 && i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      Client& c = *clients_[i - 2];
      if (std::find(dropped.begin(), dropped.end(), c.fd.get()) != dropped.end()) continue;
      if (!HandleInput(c)) dropped.push_back(c.fd.get());
    }
    for (int fd : dropped) {
      std::erase_if(parked_, [fd](const Parked& p) { return p.fd == fd; });
      std::erase_if(clients_, [fd](const std::unique_ptr<Client>& c) { return c->fd.get() == fd; });
    }
  }
}

void TcpStoreServer::Put(const std::string& key, const std::string& value) {
  {
    std::lock_guard<std::mutex> lock(data_mu_);
    data_[key] = value;
  }
  uint64_t one = 1;
  ssize_t ignored = ::write(wake_.get(), &one, sizeof(one));
  (void)ignored;
}

void TcpStoreServer::AnswerPut() {
  uint64_t count = 0;
  ssize_t ignored = ::read(wake_.get(), &count, sizeof(count));
  (void)ignored;
  std::lock_guard<std::mutex> lock(data_mu_);
  for (auto it = parked_.begin(); it != parked_.end();) {
    auto found = data_.find(it->key);
    if (found == data_.end()) {
      ++it;
      continue;
    }
    Reply(it->fd, kOk, found->second);
    it = parked_.erase(it);
  }
}

std::map<std::string, std::string> TcpStoreServer::Find(const std::string& part) const {
  std::lock_guard<std::mutex> lock(data_mu_);
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : data_)
    if (k.find(part) != std::string::npos) out.emplace(k, v);
  return out;
}

StatusOr<std::unique_ptr<TcpStoreClient>> TcpStoreClient::Connect(const HostPort& server, const std::string& token,
                                                                  Deadline deadline) {
  Hello hello;
  hello.kind = HelloKind::kStoreClient;
  // A server out of descriptors sheds a waiting connection (AcceptWaiting's reserve): this one
  // then closes without an answer to its hello. Dial again, a few times, with a growing pause;
  // a refusal (wrong token) or silence ends here, as does a server that keeps closing.
  Backoff pause(10, 500);
  for (int dial = 1;; ++dial) {
    HOOP_ASSIGN_OR_RETURN(Fd fd, ConnectRetry(server, deadline));
    SetNoDelay(fd.get());
    Status s = SendHello(fd.get(), token, hello, deadline);
    if (s.ok()) return std::unique_ptr<TcpStoreClient>(new TcpStoreClient(std::move(fd), server.ToString()));
    if (s.code() != Code::kUnavailable || dial == kHelloDials || deadline.RemainingMs() <= pause.next_ms())
      return s.WithContext("store " + server.ToString() +
                           (dial > 1 ? " (dialed " + std::to_string(dial) + " times)" : ""));
    pause.Pause(deadline);
  }
}

Status TcpStoreClient::ReadAnswer(uint8_t* status, std::string* data, Deadline deadline) {
  RespHeader r{};
  auto* bytes = reinterpret_cast<char*>(&r);
  Status s = RecvAll(fd_.get(), bytes, 1, deadline);
  if (s.code() == Code::kDeadlineExceeded) return s;
  const Deadline rest = Deadline::After(std::chrono::seconds(5));
  if (s.ok()) s = RecvAll(fd_.get(), bytes + 1, sizeof(r) - 1, rest);
  const uint64_t len = r.len;
  if (s.ok() && len > kMaxValue) s = Internal("a reply of " + std::to_string(len) + " bytes");
  if (s.ok()) data->assign(len, '\0');
  if (s.ok()) s = RecvAll(fd_.get(), data->data(), data->size(), rest);
  if (!s.ok()) return Unavailable("store " + server_ + ": " + s.message());
  *status = r.status;
  return Status::Ok();
}

StatusOr<std::string> TcpStoreClient::Call(uint8_t op, const std::string& key, uint64_t arg, const std::string& value,
                                           Deadline deadline) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!fd_.valid()) return Unavailable("store " + server_ + ": connection lost earlier");
  uint8_t status = kOk;
  std::string data;
  Status s = Status::Ok();
  while (owed_ > 0 && s.ok()) {  // late answers to earlier calls, dropped
    s = ReadAnswer(&status, &data, deadline);
    if (s.ok()) --owed_;
  }
  if (s.ok()) {
    ReqHeader h{op, static_cast<uint32_t>(key.size()), arg};
    std::string buf(reinterpret_cast<const char*>(&h), sizeof(h));
    buf += key;
    buf += value;
    s = SendAll(fd_.get(), buf.data(), buf.size(), deadline);
    owed_ += s.ok() ? 1 : 0;
    if (!s.ok()) s = Unavailable("store " + server_ + ": " + s.message());  // perhaps sent in part
  }
  if (s.ok()) s = ReadAnswer(&status, &data, deadline);
  if (s.code() == Code::kDeadlineExceeded)
    return DeadlineExceeded("store " + server_ + ": no answer in time (the server, or this process, was held up)");
  if (!s.ok()) {
    fd_.reset();  // the stream is out of step now; never reuse it
    return s;
  }
  --owed_;
  if (status == kTimeout) return DeadlineExceeded("store: key '" + key + "' did not appear in time");
  if (status == kBad)
    return InvalidArgument("store " + server_ + ": refused the request on '" + key + "' (a counter would overflow)");
  if (status != kOk) return Internal("store " + server_ + ": bad reply");
  return data;
}

Status TcpStoreClient::Set(const std::string& key, const std::string& value) {
  return Call(kSet, key, value.size(), value, Deadline::After(std::chrono::seconds(30))).status();
}

StatusOr<std::string> TcpStoreClient::Get(const std::string& key, Deadline deadline) {
  uint64_t wait_ms = static_cast<uint64_t>(deadline.RemainingMs());
  // The server answers "timeout" itself at the deadline; the slack covers the round trip.
  Deadline io = Deadline::After(std::chrono::milliseconds(wait_ms + 5000));
  return Call(kGet, key, wait_ms, "", io);
}

StatusOr<int64_t> TcpStoreClient::Add(const std::string& key, int64_t delta) {
  HOOP_ASSIGN_OR_RETURN(std::string v,
                        Call(kAdd, key, static_cast<uint64_t>(delta), "", Deadline::After(std::chrono::seconds(30))));
  int64_t out = 0;
  if (v.size() != sizeof(out)) return Internal("store " + server_ + ": bad Add reply");
  std::memcpy(&out, v.data(), sizeof(out));
  return out;
}

StatusOr<std::string> TcpStoreClient::SetIfAbsent(const std::string& key, const std::string& value, Deadline) {
  return Call(kSetIfAbsent, key, value.size(), value, Deadline::After(std::chrono::seconds(30)));
}

StatusOr<std::unique_ptr<Store>> OpenStore(const std::string& url, const std::string& token, Deadline deadline) {
  if (url.rfind("tcp://", 0) == 0) {
    HOOP_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(url.substr(6)));
    HOOP_ASSIGN_OR_RETURN(auto client, TcpStoreClient::Connect(hp, token, deadline));
    return std::unique_ptr<Store>(std::move(client));
  }
  if (url.rfind("file://", 0) == 0) {
    HOOP_ASSIGN_OR_RETURN(auto fs, FileStore::Open(url.substr(7)));
    return std::unique_ptr<Store>(std::move(fs));
  }
  return InvalidArgument("HOOP_STORE='" + url + "': expected tcp://HOST:PORT or file:///DIR");
}

}  // namespace hoop
