// Requests of the C API's nonblocking calls (hoop_i*): what a hoop_request_t stands for.
//
// A hoop_request_t is an id, never a pointer to memory: ids count up from 1 in 64 bits and are
// never reused, so a request used after hoop_wait, hoop_wait_all or hoop_request_free freed it is
// found missing and refused (HOOP_ERR_INVALID_ARGUMENT) instead of reading freed memory, as MPI's
// handle tables do. The table is the process's: a C call on a request names no communicator
// through which it could be reached. Not a public header.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "collectives/api/communicator.h"
#include "hoop/hoop.h"

namespace hoop::capi {

struct Request {
  Work work;
  int rank = -1;     // for messages
  const char* call;  // "hoop_iallreduce"
  uint64_t id = 0;
  // hoop_irecv's result, shared with the receive, and where the caller wants it.
  std::shared_ptr<RecvInfo> info;
  hoop_recv_info_t* user_info = nullptr;
};

class RequestTable {
 public:
  hoop_request_t Add(Work work, int rank, const char* call, std::shared_ptr<RecvInfo> info = nullptr,
                     hoop_recv_info_t* user_info = nullptr);
  // A copy of the request (Work shares its state), or none: freed, or never issued.
  std::optional<Request> Find(hoop_request_t r) const;
  void Remove(hoop_request_t r);
  size_t size() const;

 private:
  mutable std::mutex mu_;
  uint64_t next_ = 1;
  std::unordered_map<uint64_t, Request> live_;
};

RequestTable& Requests();

}  // namespace hoop::capi
