// The TCP store: a tiny key-value server (run by hooprun, or by rank 0 of an mpirun/Slurm job)
// and its client. One connection per client; requests are framed
//   request:  u8 op | u32 key_len | u64 arg | key | value   (arg: value length for Set and
//             SetIfAbsent, Get's timeout in ms, or Add's delta)
//   response: u8 status | u64 len | data
// A Get for a missing key is parked on the server until the key is set or its timeout passes,
// so waiting costs no polling traffic. Every client must pass the token handshake first.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "transport/store/store.h"
#include "transport/util/refusal_log.h"
#include "transport/util/socket.h"

namespace hoop {

class TcpStoreServer {
 public:
  // Listens on host:port (0: any free port) and serves from a thread until destroyed.
  static StatusOr<std::unique_ptr<TcpStoreServer>> Start(const std::string& host, int port, const std::string& token);
  ~TcpStoreServer();
  int port() const { return port_; }
  // Connections refused so far (wrong token or not a hoop client).
  int refused() const { return refused_.load(); }
  // The entries whose key contains `part` (hooprun reads the ranks' stall verdicts this way).
  std::map<std::string, std::string> Find(const std::string& part) const;
  // Sets `key` from this process, as a client's Set would (hooprun publishes lost ranks so).
  void Put(const std::string& key, const std::string& value);

 private:
  struct Client;
  struct Parked;
  TcpStoreServer(Fd listen_fd, int port, std::string token, Fd wake);
  void Serve();
  void AcceptClient();
  bool HandleInput(Client& c);                     // false: drop the client
  bool Refuse(Client& c, const std::string& why);  // logs, answers "refused"; returns false
  void Reply(int fd, uint8_t status, const std::string& data);
  void AnswerPut();  // on Serve's thread: the parked Gets whose key a Put set

  Fd listen_fd_;
  int port_;
  std::string token_;
  Fd wake_;     // eventfd that wakes Serve(): to stop, or to answer Gets a Put satisfied
  Fd reserve_;  // spare descriptor: out of them, a waiting client is dropped, not left queued
  Deadline listen_again_ = Deadline::After(std::chrono::milliseconds(0));  // accepting paused until
  std::atomic<bool> stop_{false};
  std::atomic<int> refused_{0};
  RefusalLog refusals_{"store"};
  mutable std::mutex data_mu_;
  std::map<std::string, std::string> data_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::vector<Parked> parked_;
  std::thread thread_;
};

class TcpStoreClient : public Store {
 public:
  // Dials (ConnectRetry) and says hello; a connection the server closes unanswered (shed while it
  // is out of descriptors) is dialed again, up to kHelloDials times in all, about 2 s.
  static StatusOr<std::unique_ptr<TcpStoreClient>> Connect(const HostPort& server, const std::string& token,
                                                           Deadline deadline);
  static constexpr int kHelloDials = 10;
  Status Set(const std::string& key, const std::string& value) override;
  StatusOr<std::string> Get(const std::string& key, Deadline deadline) override;
  StatusOr<int64_t> Add(const std::string& key, int64_t delta) override;
  StatusOr<std::string> SetIfAbsent(const std::string& key, const std::string& value, Deadline deadline) override;
  // This host's address on the route to the store server: what peers can most likely reach.
  const std::string& local_address() const { return local_address_; }

 private:
  TcpStoreClient(Fd fd, std::string server)
      : fd_(std::move(fd)), server_(std::move(server)), local_address_(LocalAddressOf(fd_.get())) {}
  StatusOr<std::string> Call(uint8_t op, const std::string& key, uint64_t arg, const std::string& value,
                             Deadline deadline);
  // One answer: its first byte by `deadline` (else kDeadlineExceeded, nothing of it read), the
  // rest at once (the server writes an answer whole); any other failure leaves the stream out of
  // step.
  Status ReadAnswer(uint8_t* status, std::string* data, Deadline deadline);
  std::mutex mu_;
  Fd fd_;
  // Answers to requests whose caller stopped waiting (the server, or this process, was held up
  // past the deadline: a SIGSTOP, a loaded host): read and dropped before the next request, so
  // that one late answer costs that call only, not the connection.
  int owed_ = 0;
  std::string server_;
  std::string local_address_;
};

}  // namespace hoop
