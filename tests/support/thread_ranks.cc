// See thread_ranks.h.
#include "tests/support/thread_ranks.h"

#include <condition_variable>
#include <mutex>
#include <thread>

namespace hoop::test {

namespace {
// Runs f(r) for every rank on its own thread; waits for all up to `limit`, calling `on_hang`
// once if the limit passes first (it must make the stragglers return), then joins.
std::vector<Status> OnThreads(int n, const std::function<Status(int)>& f, std::chrono::seconds limit,
                              const std::function<void()>& on_hang, std::vector<int>* late) {
  std::vector<Status> result(static_cast<size_t>(n));
  std::vector<bool> done(static_cast<size_t>(n), false);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      Status s = f(r);
      std::lock_guard<std::mutex> lock(mu);
      result[static_cast<size_t>(r)] = s;
      done[static_cast<size_t>(r)] = true;
      cv.notify_all();
    });
  {
    std::unique_lock<std::mutex> lock(mu);
    auto all = [&] {
      for (bool d : done)
        if (!d) return false;
      return true;
    };
    if (!cv.wait_for(lock, limit, all)) {
      for (int r = 0; r < n; ++r)
        if (!done[static_cast<size_t>(r)]) late->push_back(r);
      lock.unlock();
      on_hang();
    }
  }
  for (auto& t : threads) t.join();
  return result;
}

std::string List(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}
}  // namespace

StatusOr<std::unique_ptr<ThreadRanks>> ThreadRanks::Start(int n, const std::string& transport,
                                                          std::chrono::milliseconds op_timeout,
                                                          const std::function<void(CommOptions&)>& tweak) {
  std::unique_ptr<ThreadRanks> t(new ThreadRanks);
  t->comms_.resize(static_cast<size_t>(n));
  std::vector<int> late;
  auto made = OnThreads(
      n,
      [&](int r) -> Status {
        CommOptions o;
        o.name = "inproc";
        o.rank = r;
        o.size = n;
        o.transport = transport;
        o.timeout = op_timeout;
        if (tweak) tweak(o);
        auto c = Communicator::Create(t->store_, o);
        if (!c.ok()) return c.status();
        t->comms_[static_cast<size_t>(r)] = std::move(c).value();
        return Status::Ok();
      },
      std::chrono::duration_cast<std::chrono::seconds>(op_timeout) + std::chrono::seconds(10), [] {}, &late);
  for (int r = 0; r < n; ++r)
    if (!made[static_cast<size_t>(r)].ok())
      return made[static_cast<size_t>(r)].WithContext("in-process rank " + std::to_string(r) + " of " +
                                                      std::to_string(n));
  return t;
}

ThreadRanks::~ThreadRanks() = default;

Status ThreadRanks::Run(const std::function<Status(int, Communicator&)>& body, std::chrono::seconds limit) {
  std::vector<int> late;
  auto results = OnThreads(
      size(), [&](int r) { return body(r, comm(r)); }, limit,
      [&] {
        for (auto& c : comms_) c->Abort("the in-process test's time limit passed");
      },
      &late);
  if (!late.empty())
    return DeadlineExceeded("in-process ranks " + List(late) + " had not finished after " +
                            std::to_string(limit.count()) + " s; every communicator was aborted");
  for (int r = 0; r < size(); ++r)
    if (!results[static_cast<size_t>(r)].ok())
      return results[static_cast<size_t>(r)].WithContext("in-process rank " + std::to_string(r));
  return Status::Ok();
}

}  // namespace hoop::test
