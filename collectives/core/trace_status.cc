// See trace_status.h.
#include "collectives/core/trace_status.h"

#include <unistd.h>

#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/json_text.h"
#include "common/logging.h"
#include "transport/store/store.h"

namespace hoop {

namespace {

constexpr auto kPark = std::chrono::seconds(10);  // a parked Get's length: how late a watcher notices it is idle

// One store's watcher and the communicators it answers for.
struct Watch {
  std::string token;
  int job_rank = -1;
  std::map<int, TraceStatus::Answer> answers;  // by handle
  bool running = false;                        // its thread
};

struct Registry {
  std::mutex mu;
  std::map<std::string, Watch> watches;  // by store URL
  std::map<int, std::string> urls;       // handle -> its store
  int next = 1;
};

// Never destroyed: a watcher may outlive static destruction.
Registry& Reg() {
  static Registry* r = new Registry;
  return *r;
}

// Under the registry's lock: the process's answer, every communicator's recorder.
std::string Reply(const Watch& w) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::ostringstream j;
  j << "{\"hoop_status\": 1, \"job_rank\": " << w.job_rank << ", \"pid\": " << ::getpid()
    << ", \"host\": " << JsonQuoted(host) << ", \"comms\": [";
  bool first = true;
  for (const auto& [handle, answer] : w.answers) {
    j << (first ? "\n" : ",\n") << answer();
    first = false;
  }
  j << "]}\n";
  return j.str();
}

// Ends the watcher (its thread returning) where nobody is left to answer for, or the store is gone.
bool Idle(const std::string& url, bool gone) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  Watch& w = r.watches[url];
  if (!gone && !w.answers.empty()) return false;
  w.running = false;
  return true;
}

void Serve(const std::string& url, const std::string& token, int job_rank) {
  auto store = OpenStore(url, token, Deadline::After(std::chrono::seconds(5)));
  if (!store.ok()) {
    HOOP_LOG(kDebug,
             "flight recorder: no live view (hooprun --status) through " << url << ": " << store.status().message());
    Idle(url, true);
    return;
  }
  // Asks made before this process watched are not waited for.
  auto asked = (*store)->Add("hoop/status/asked", 0);
  int64_t next = asked.ok() ? *asked + 1 : 1;
  while (!Idle(url, !asked.ok())) {
    auto got = (*store)->Get("hoop/status/ask/" + std::to_string(next), Deadline::After(kPark));
    if (!got.ok()) {
      if (got.status().code() == Code::kDeadlineExceeded) continue;
      Idle(url, true);  // the store went: the job is over
      return;
    }
    std::string reply;
    {
      Registry& r = Reg();
      std::lock_guard<std::mutex> lock(r.mu);  // unregistering waits for the answer in progress
      reply = Reply(r.watches[url]);
    }
    (void)(*store)->Set("hoop/status/" + std::to_string(next) + "/" + std::to_string(job_rank), reply);
    ++next;
  }
}

}  // namespace

int TraceStatus::Register(const std::string& url, const std::string& token, int job_rank, Answer answer) {
  if (url.rfind("tcp://", 0) != 0 || job_rank < 0) return 0;
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  Watch& w = r.watches[url];
  const int handle = r.next++;
  w.answers.emplace(handle, std::move(answer));
  r.urls.emplace(handle, url);
  if (!w.running) {
    w.running = true;
    w.token = token;
    w.job_rank = job_rank;
    std::thread(Serve, url, token, job_rank).detach();
  }
  return handle;
}

void TraceStatus::Unregister(int handle) {
  if (handle == 0) return;
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);  // waits for an answer in progress: it may read this one
  auto it = r.urls.find(handle);
  if (it == r.urls.end()) return;
  r.watches[it->second].answers.erase(handle);
  r.urls.erase(it);
}

}  // namespace hoop
