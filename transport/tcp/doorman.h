// Doorman: the TCP back end's listening socket, served without ever blocking on a caller.
//
// Every connection must open with a hello that proves the job token and names the communicator
// and the caller's rank (transport/util/handshake.h). The doorman accepts whatever waits, reads hellos
// as their bytes arrive, from any number of callers at once, and drops a caller that has not
// finished its hello within 5 s. So a silent stranger costs nobody anything: before, the rank
// read one hello at a time with 5 s each, and three silent connections delayed a job by 15 s.
//
// While the communicator is being built (admitting), a hello from a lower rank of this
// communicator with the right token is answered "accepted" and its connection handed over.
// Afterwards every newcomer is a stranger or a stale peer: it is refused once its hello is read
// (or its time is up). Every refusal is logged with the caller's address and the reason.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "transport/util/refusal_log.h"
#include "transport/util/socket.h"

namespace hoop {

class Doorman {
 public:
  struct Admitted {
    int rank;
    Fd fd;
    std::string address;
  };

  Doorman(int listen_fd, std::string token, std::string comm, int rank, int size);
  // Accepts what waits, reads what hellos have arrived, answers them, drops callers whose time is
  // up. While admitting, hands over the peers whose hellos were accepted.
  void Serve(bool admitting, std::vector<Admitted>* admitted);
  // The descriptors to wait on (the listening socket and every caller still to finish its hello).
  std::vector<int> Watched() const;
  // Milliseconds until the next caller's time is up (or `cap`).
  int NextExpiryMs(int cap) const;
  bool has_callers() const { return !callers_.empty(); }
  int refused() const { return refused_; }

 private:
  struct Caller {
    Fd fd;
    std::string address;
    std::string in;
    std::chrono::steady_clock::time_point hello_by;
  };
  // Reads what the caller sent; true when it is done with (answered or dropped).
  bool Read(Caller& c, bool admitting, std::vector<Admitted>* admitted);
  void Refuse(Caller& c, const std::string& why);

  int listen_fd_;
  std::string token_, comm_;
  int rank_, size_;
  Fd reserve_;  // spare descriptor: out of them, a waiting caller is dropped, not left queued
  std::vector<Caller> callers_;
  std::vector<int> admitted_ranks_;
  int refused_ = 0;
  RefusalLog refusals_{"tcp"};
};

}  // namespace hoop
