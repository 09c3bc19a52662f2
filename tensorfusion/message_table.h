// The coordinator's message table (rank 0 only): for every tensor name, which ranks have said
// they have it ready, and with what parameters.
//
// When every rank has reported a name, the table decides: if all ranks passed the same
// parameters, a response to run it; if not, an error response naming the tensor, the ranks and
// each differing value ("tensor 'w': ranks disagree: dtype f32 on ranks 0, 2, 3; f64 on rank
// 1"), which fails it on every rank. A name some ranks have not reported within the timeout gets
// an error response that names the ranks missing, so no rank waits for ever. Stalled() gives
// the stall inspector's warnings. Pure logic: time is passed in.
//
// Joined ranks (Horovod's join, Runtime::Join) have no more tensors of their own: a name counts
// as reported by every rank that has joined without reporting it. An allreduce complete that way
// runs, the joined ranks standing in with the op's identity; a broadcast or allgather fails with
// an error naming them. Once every rank has joined, a join response (Response::join_last: the
// rank that joined last) ends the join, and ranks count as not joined again.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensorfusion/request.h"

namespace hoop::fusion {

using Clock = std::chrono::steady_clock;

// "ranks 0, 2, 3" or "rank 1"
std::string RankList(const std::vector<int>& ranks);
// The differences between ranks' parameters for one tensor, or "" if they all agree. Ranks
// marked in `skip` (joined ranks standing in) are left out.
std::string DescribeDisagreement(const std::vector<TensorParams>& by_rank, const std::vector<bool>& skip = {});

class MessageTable {
 public:
  explicit MessageTable(int nranks) : n_(nranks), joined_(static_cast<size_t>(nranks), false) {}

  void Add(int rank, const Request& r, Clock::time_point now);  // a join request too
  // Names every rank has reported, in the order they became complete, then names waiting past
  // `timeout` since their first submission (errors); both leave the table.
  std::vector<Response> TakeDecided(Clock::time_point now, std::chrono::milliseconds timeout,
                                    std::string_view timeout_name = "HOOP_TIMEOUT");
  // One line per name waiting longer than `after` (each name at most once per `after`): how long,
  // who submitted it, who has not.
  std::vector<std::string> Stalled(Clock::time_point now, std::chrono::duration<double> after);
  bool empty() const { return entries_.empty(); }

 private:
  struct Entry {
    std::vector<std::optional<TensorParams>> by_rank;
    int reported = 0;
    Clock::time_point first;  // when its earliest submission was made, on its own rank
    Clock::time_point warned;
    uint64_t completed = 0;  // order in which it became complete; 0: not yet
  };
  std::vector<int> Ranks(const Entry& e, bool submitted) const;
  // A completed entry's response: its parameters, or the error that fails it.
  Response Decide(const std::string& name, const Entry& e) const;
  int n_;
  std::vector<bool> joined_;  // by rank
  int joined_count_ = 0, last_joined_ = -1;
  uint64_t completions_ = 0;
  std::map<std::string, Entry> entries_;
};

}  // namespace hoop::fusion
