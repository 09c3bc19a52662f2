// What the tensor fusion negotiation talks about. A rank that has a named tensor ready sends a
// Request (the name and the call's parameters); the coordinator answers with a Response once
// every rank has sent one for that name: the parameters to run with, or an error that fails the
// tensor on every rank (the ranks disagree, or some never submitted it in time).
//
// Lists of both travel as bytes through the communicator's collectives (negotiator.h), so each
// has a compact little-endian encoding here; decoding checks every length and value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/core/op_desc.h"
#include "common/dtype.h"
#include "common/status.h"

namespace hoop::fusion {

// compression: a Compression value (kernels/wire.h), or this: the communicator's default.
constexpr uint8_t kDefaultCompression = 0xff;

struct TensorParams {
  CollKind kind = CollKind::kAllreduce;  // allreduce, broadcast or allgather
  DType dtype = DType::kF32;
  ReduceOp op = ReduceOp::kSum;  // allreduce only
  int32_t root = -1;             // broadcast only
  uint64_t count = 0;            // elements: the buffer (allgather: this rank's part)
  uint8_t compression = kDefaultCompression;
  // Where this rank's tensor lives. Ranks may differ (a hybrid job: device tensors on the GPU
  // rank, host tensors on the CPU ranks): each moves its own memory, the messages are the same.
  // The agreed (rank 0's) value only keeps its host and device tensors in separate groups.
  MemKind mem = MemKind::kHost;
  double prescale = 1, postscale = 1;  // allreduce of floating-point data only
  // Runs alone, straight on the caller's buffers, whatever its size (TensorOptions::fuse):
  // for tensors that are already buckets of their own, such as the trainer's gradient arena's.
  bool unfused = false;

  bool operator==(const TensorParams&) const = default;
  // What every rank must submit alike: all but `mem`.
  bool Agrees(const TensorParams& o) const {
    TensorParams a = *this;
    a.mem = o.mem;
    return a == o;
  }
  // Bytes the tensor takes in a fusion buffer: its buffer, all ranks' parts for allgather.
  uint64_t FusedBytes(int nranks) const;
};

// "allreduce 1000 x f32 sum", "broadcast 7 x i64 root 2"
std::string DescribeParams(const TensorParams& p);

struct Request {
  std::string name;
  TensorParams params;
  uint32_t age_ms = 0;  // how long the tensor has waited on the sending rank
  // Not a tensor: the sending rank has joined (Runtime::Join); name and params are unused.
  bool join = false;
};

struct Response {
  std::string name;
  TensorParams params;
  std::string error;  // non-empty: fail the tensor with this message
  // The error is a wait that ran out (some rank never submitted the tensor within HOOP_TIMEOUT:
  // DeadlineExceeded, HOOP_ERR_TIMEOUT), not a disagreement (FailedPrecondition, MISMATCH).
  bool timed_out = false;
  // Not a tensor: every rank has joined; this is the rank that joined last (name, params unused).
  int32_t join_last = -1;
};

void EncodeRequests(const std::vector<Request>& list, std::vector<char>* out);
StatusOr<std::vector<Request>> DecodeRequests(const char* data, size_t size);
void EncodeResponses(const std::vector<Response>& list, std::vector<char>* out);
StatusOr<std::vector<Response>> DecodeResponses(const char* data, size_t size);

}  // namespace hoop::fusion
