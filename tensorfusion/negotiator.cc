#include "tensorfusion/negotiator.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "common/logging.h"

namespace hoop::fusion {

namespace {
constexpr size_t kHeader = 3;

Buffer Bytes(void* p, size_t n) { return Buffer{p, n, DType::kU8, MemKind::kHost}; }
Buffer Int64s(int64_t* p, size_t n) { return Buffer{p, n, DType::kI64, MemKind::kHost}; }
}  // namespace

Negotiator::Negotiator(Communicator& comm, std::chrono::milliseconds timeout, std::string timeout_name,
                       double stall_warning_s, const std::atomic<int>* waiters)
    : comm_(comm),
      timeout_(timeout),
      timeout_name_(std::move(timeout_name)),
      stall_warning_s_(stall_warning_s),
      table_(comm.size()) {
  blocking_.waiters = waiters;
  blocking_.trace_name = "tensor fusion: negotiation";  // what the ranks are in, in a dump
}

StatusOr<Readiness> Negotiator::ExchangeReadiness(bool need_coordinator, bool shutdown, bool joined,
                                                  const std::vector<uint8_t>& bits) {
  vec_.resize(kHeader + bits.size());
  vec_[0] = need_coordinator ? 0 : 1;
  vec_[1] = shutdown ? static_cast<uint8_t>(std::min(comm_.rank(), 254)) : 255;
  vec_[2] = joined ? 0 : 1;
  if (!bits.empty()) std::memcpy(vec_.data() + kHeader, bits.data(), bits.size());
  Buffer b = Bytes(vec_.data(), vec_.size());
  HOOP_RETURN_IF_ERROR(comm_.Allreduce(b, b, ReduceOp::kMin, blocking_).Wait());
  Readiness r;
  r.need_coordinator = vec_[0] == 0;
  r.shutdown_by = vec_[1] == 255 ? -1 : vec_[1];
  r.some_joined = vec_[2] == 0;
  for (size_t s = 0; s < bits.size(); ++s)
    if (vec_[kHeader + s]) r.ready_slots.push_back(s);
  return r;
}

Status Negotiator::Gather(const std::vector<char>& mine, std::vector<std::vector<char>>* all) {
  const size_t n = static_cast<size_t>(comm_.size());
  std::vector<int64_t> lens(n);
  int64_t my_len = static_cast<int64_t>(mine.size());
  HOOP_RETURN_IF_ERROR(comm_.Allgather(Int64s(&my_len, 1), Int64s(lens.data(), n), blocking_).Wait());
  size_t longest = static_cast<size_t>(*std::max_element(lens.begin(), lens.end()));
  send_.assign(longest, 0);
  std::memcpy(send_.data(), mine.data(), mine.size());
  recv_.resize(longest * n);
  HOOP_RETURN_IF_ERROR(
      comm_.Allgather(Bytes(send_.data(), longest), Bytes(recv_.data(), longest * n), blocking_).Wait());
  all->assign(n, {});
  for (size_t r = 0; r < n; ++r) (*all)[r].assign(recv_.data() + r * longest, recv_.data() + r * longest + lens[r]);
  return Status::Ok();
}

Status Negotiator::BroadcastBytes(std::vector<char>* bytes) {
  int64_t len = static_cast<int64_t>(bytes->size());
  HOOP_RETURN_IF_ERROR(comm_.Broadcast(Int64s(&len, 1), Int64s(&len, 1), 0, blocking_).Wait());
  bytes->resize(static_cast<size_t>(len));
  Buffer b = Bytes(bytes->data(), bytes->size());
  return comm_.Broadcast(b, b, 0, blocking_).Wait();
}

StatusOr<std::vector<Response>> Negotiator::Coordinate(const std::vector<Request>& mine) {
  std::vector<char> encoded;
  EncodeRequests(mine, &encoded);
  std::vector<std::vector<char>> all;
  HOOP_RETURN_IF_ERROR(Gather(encoded, &all));
  std::vector<char> answer;
  if (comm_.rank() == 0) {
    auto now = Clock::now();
    for (size_t r = 0; r < all.size(); ++r) {
      HOOP_ASSIGN_OR_RETURN(auto requests, DecodeRequests(all[r].data(), all[r].size()));
      for (const Request& q : requests) table_.Add(static_cast<int>(r), q, now);
    }
    std::vector<Response> decided = table_.TakeDecided(now, timeout_, timeout_name_);
    if (stall_warning_s_ > 0)
      for (const std::string& line : table_.Stalled(now, std::chrono::duration<double>(stall_warning_s_)))
        HOOP_LOG(kWarn, "tensor fusion stall: " << line);
    EncodeResponses(decided, &answer);
  }
  HOOP_RETURN_IF_ERROR(BroadcastBytes(&answer));
  return DecodeResponses(answer.data(), answer.size());
}

}  // namespace hoop::fusion
