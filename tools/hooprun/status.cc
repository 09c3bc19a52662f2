// See status.h.
#include "tools/hooprun/status.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tools/hoop-doctor/diagnose.h"
#include "transport/store/tcp_store.h"

namespace hoop::run {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr double kHungAfterS = 1.0;  // a wait this long in one operation: the finding is given

std::string JobDir(const std::map<std::string, std::string>& env) {
  auto tmp = env.find("TMPDIR");
  const std::string base = tmp != env.end() && !tmp->second.empty() ? tmp->second : "/tmp";
  return base + "/hoop-" + std::to_string(::getuid());
}

bool Alive(int pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

// The running jobs' files (a dead hooprun's, left by a SIGKILL, are removed).
std::vector<json> FindJobs(const std::string& dir) {
  std::vector<json> jobs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("hooprun.", 0) != 0 || e.path().extension() != ".json") continue;
    std::ifstream in(e.path());
    json j = json::parse(in, nullptr, false);
    if (!j.is_object() || !j.contains("pid") || !j.contains("store")) continue;
    if (!Alive(j.value("pid", 0))) {
      fs::remove(e.path(), ec);
      continue;
    }
    jobs.push_back(std::move(j));
  }
  std::sort(jobs.begin(), jobs.end(), [](const json& a, const json& b) { return a["pid"] < b["pid"]; });
  return jobs;
}

// A local process's state letter from /proc (R, S, D, T stopped, t traced, Z); '?' if unknown.
char ProcState(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!pid || !std::getline(in, line)) return '?';
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() ? line[close + 2] : '?';
}

// What one rank said: its communicators' recorders (null: no answer).
struct Row {
  json launcher;  // hoop/launcher/ranks's entry
  json answer;    // hoop/status/<n>/<rank>, parsed
};

// The operation a communicator's rank is at: the oldest in flight, else its last.
const json* Current(const json& comm) {
  const json& ops = comm["ops"];
  if (!ops.is_array() || ops.empty()) return nullptr;
  for (const json& op : ops) {
    const std::string st = op.value("state", "");
    if (st == "started" || st == "queued") return &op;
  }
  return &ops.back();
}

std::string OpText(const json& op) {
  std::ostringstream s;
  const std::string name = op.value("op", "?");
  s << name;
  if (name != "barrier") s << " " << op.value("count", 0) << " x " << op.value("dtype", "?");
  if (op.value("root", -1) >= 0) s << " (root " << op.value("root", -1) << ")";
  if (op.value("peer", -1) >= 0) s << (name == "send" ? " to " : " from ") << op.value("peer", -1);
  return s.str();
}

// How long `op` has waited, in seconds, by its communicator's clock (-1: not in flight).
double Waited(const json& comm, const json& op) {
  const std::string st = op.value("state", "");
  if (st != "started" && st != "queued") return -1;
  const double since = st == "started" ? op.value("started_s", -1.0) : op.value("queued_s", -1.0);
  return since < 0 ? -1 : std::max(0.0, comm.value("now_s", 0.0) - since);
}

std::string StateText(const json& comm, const json& op, int64_t furthest) {
  std::ostringstream s;
  s.precision(1);
  s << std::fixed;
  const std::string st = op.value("state", "?");
  const double waited = Waited(comm, op);
  s << st;
  if (waited >= 0) s << " " << waited << " s";
  if (st == "started" && !op.value("algo", std::string()).empty())
    s << ", " << op.value("algo", std::string()) << " step " << op.value("step", 0) << " chunk "
      << op.value("chunk", 0);
  if (st == "failed") s << ": " << op.value("error", std::string()).substr(0, 80);
  const int64_t seq = op.value("seq", int64_t{-1});
  if (seq >= 0 && seq < furthest) s << "; behind by " << furthest - seq;
  if (const std::string name = op.value("name", std::string()); !name.empty()) s << "  [" << name << "]";
  return s.str();
}

// A rank that did not answer: why, as far as this host can tell.
std::string Silent(const json& launcher, double timeout_s) {
  if (launcher.value("state", "") == "exited") return "gone: " + launcher.value("how", std::string("exited"));
  std::ostringstream s;
  s << "no answer in " << timeout_s << " s";
  const int pid = launcher.value("pid", -1);
  const char st = pid > 0 ? ProcState(pid) : '?';
  if (st == 'T' || st == 't')
    s << ": stopped (SIGSTOP, or a debugger)";
  else if (st == 'Z')
    s << ": exiting";
  else
    s << ": no communicator yet, stopped, or stuck with its answering thread";
  return s.str();
}

// The job `hooprun --status [PID]` asks: the one running, or the one named.
StatusOr<json> PickJob(const Options& o, const std::map<std::string, std::string>& env) {
  const std::string dir = JobDir(env);
  std::vector<json> jobs = FindJobs(dir);
  if (!o.command.empty()) {
    const std::string& want = o.command[0];
    for (const json& j : jobs)
      if (std::to_string(j.value("pid", 0)) == want) return j;
    return NotFound("no running hooprun of pid " + want + " (its job file is looked for in " + dir + ")");
  }
  if (jobs.empty()) return NotFound("no running hooprun job of this user (no job file in " + dir + ")");
  if (jobs.size() > 1) {
    std::string list;
    for (const json& j : jobs)
      list += "\n  " + std::to_string(j.value("pid", 0)) + ": " + j.value("command", std::string());
    return InvalidArgument(std::to_string(jobs.size()) + " hooprun jobs are running; name one: hooprun --status PID" +
                           list);
  }
  return jobs[0];
}

// Asks every rank through the store and waits up to `timeout_s` for their answers.
StatusOr<std::vector<Row>> Ask(const json& job, double timeout_s) {
  const std::string url = job.value("store", std::string());
  HOOP_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(url.rfind("tcp://", 0) == 0 ? url.substr(6) : url));
  HOOP_ASSIGN_OR_RETURN(auto store, TcpStoreClient::Connect(hp, job.value("token", std::string()),
                                                            Deadline::After(std::chrono::seconds(5))));
  HOOP_ASSIGN_OR_RETURN(int64_t n, store->Add("hoop/status/asked", 1));
  HOOP_RETURN_IF_ERROR(store->Set("hoop/status/ask/" + std::to_string(n), ""));
  const Deadline deadline = Deadline::After(std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
  HOOP_ASSIGN_OR_RETURN(std::string listed, store->Get("hoop/launcher/ranks", deadline));
  json ranks = json::parse(listed, nullptr, false);
  if (!ranks.is_array()) return Internal("hoop/launcher/ranks: not a list");
  std::vector<Row> rows;
  for (const json& r : ranks) {
    Row row{r, nullptr};
    if (r.value("state", "") != "exited") {
      // Each waits for what is left of the one deadline: the slow ones are all waited for together.
      auto got = store->Get("hoop/status/" + std::to_string(n) + "/" + std::to_string(r.value("rank", -1)),
                            deadline.Expired() ? Deadline::After(std::chrono::milliseconds(1)) : deadline);
      if (got.ok()) row.answer = json::parse(*got, nullptr, false);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

// The furthest collective each communicator's ranks entered.
std::map<std::string, int64_t> Furthest(const std::vector<Row>& rows) {
  std::map<std::string, int64_t> far;
  for (const Row& row : rows)
    if (row.answer.is_object())
      for (const json& c : row.answer.value("comms", json::array()))
        if (const json* op = Current(c)) {
          int64_t& f = far.emplace(c.value("comm", "?"), -1).first->second;
          f = std::max(f, op->value("seq", int64_t{-1}));
        }
  return far;
}

// Prints the table; the longest wait in it, in seconds.
double PrintTable(const std::vector<Row>& rows, double timeout_s) {
  const auto far = Furthest(rows);
  double longest = 0;
  std::printf("%-5s %-16s %-8s %-14s %-6s %-28s %s\n", "RANK", "HOST", "PID", "COMMUNICATOR", "SEQ", "OPERATION",
              "STATE");
  for (const Row& row : rows) {
    const json& l = row.launcher;
    const std::string host = l.value("host", std::string("?"));
    const std::string pid =
        l.value("pid", -1) > 0 ? std::to_string(l.value("pid", -1)) : "-";  // a remote rank's: not known here
    const int rank = l.value("rank", -1);
    const json comms = row.answer.is_object() ? row.answer.value("comms", json::array()) : json::array();
    if (comms.empty()) {
      const std::string why = row.answer.is_object() ? "answered: no communicator" : Silent(l, timeout_s);
      std::printf("%-5d %-16s %-8s %-14s %-6s %-28s %s\n", rank, host.c_str(), pid.c_str(), "-", "-", "-", why.c_str());
      continue;
    }
    for (const json& c : comms) {
      const std::string name = c.value("comm", std::string("?"));
      const json* op = Current(c);
      std::string seq = "-", what = "(no operation yet)", state = "idle";
      if (op) {
        seq = op->value("seq", int64_t{-1}) >= 0 ? std::to_string(op->value("seq", int64_t{-1})) : "p2p";
        what = OpText(*op);
        state = StateText(c, *op, far.at(name));
        longest = std::max(longest, Waited(c, *op));
      }
      std::printf("%-5d %-16s %-8s %-14s %-6s %-28s %s\n", rank, host.c_str(), pid.c_str(), name.c_str(), seq.c_str(),
                  what.c_str(), state.c_str());
    }
  }
  return longest;
}

// A line of hoop-doctor's, said of answers rather than of dump files.
std::string Answered(std::string line) {
  for (const auto& [dump, answer] : {std::pair<std::string, std::string>{" wrote no dump", " did not answer"},
                                     {"no dump from it", "no answer from it"},
                                     {"the dumps cannot", "the answers cannot"}})
    if (auto at = line.find(dump); at != std::string::npos) line.replace(at, dump.size(), answer);
  return line;
}

// hoop-doctor's finding on the answers; its exit code.
int PrintFinding(const std::vector<Row>& rows) {
  std::vector<doctor::RankDump> dumps;
  for (const Row& row : rows)
    if (row.answer.is_object())
      for (const json& c : row.answer.value("comms", json::array()))
        doctor::ParseDump(c.dump(), "rank " + std::to_string(row.launcher.value("rank", -1)), &dumps);
  static const std::string kOrder = "3475680";  // hoop-doctor's: the most telling first
  int worst = 0;
  for (const doctor::Diagnosis& d : doctor::Diagnose(dumps)) {
    if (d.verdict == doctor::kHealthy) continue;
    std::printf("communicator '%s': %s\n", d.comm.c_str(), doctor::VerdictName(d.verdict));
    for (const std::string& line : d.lines) std::printf("  %s\n", Answered(line).c_str());
    if (kOrder.find(static_cast<char>('0' + d.verdict)) < kOrder.find(static_cast<char>('0' + worst)))
      worst = d.verdict;
  }
  return worst;
}

}  // namespace

std::string WriteJobFile(const std::map<std::string, std::string>& env, const std::string& store,
                         const std::string& token, int np, const std::vector<std::string>& command) {
  const std::string dir = JobDir(env);
  ::mkdir(dir.c_str(), 0700);
  std::string cmd;
  for (const std::string& w : command) cmd += (cmd.empty() ? "" : " ") + w;
  const json j = {{"pid", ::getpid()}, {"store", store}, {"token", token},
                  {"np", np},          {"command", cmd}, {"started", static_cast<int64_t>(::time(nullptr))}};
  const std::string path = dir + "/hooprun." + std::to_string(::getpid()) + ".json";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  const std::string text = j.dump() + "\n";
  if (fd < 0 || ::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    if (fd >= 0) ::close(fd);
    std::fprintf(stderr, "hooprun: cannot write %s (%s): hooprun --status will not find this job\n", path.c_str(),
                 std::strerror(errno));
    return "";
  }
  ::close(fd);
  return path;
}

void RemoveJobFile(const std::string& path) {
  if (!path.empty()) ::unlink(path.c_str());
}

std::string RankStateJson(const Rank& r) {
  json j = {{"rank", r.rank},
            {"host", r.host},
            {"pid", r.remote ? -1 : static_cast<int>(r.pid)},
            {"state", r.exited ? "exited" : "running"}};
  if (r.exited) j["how"] = DescribeExit(r.wait_status);
  return j.dump();
}

int ShowStatus(const Options& o, const std::map<std::string, std::string>& env) {
  auto job = PickJob(o, env);
  if (!job.ok()) {
    std::fprintf(stderr, "hooprun --status: %s\n", job.status().message().c_str());
    return job.status().code() == Code::kNotFound ? 1 : 2;
  }
  auto rows = Ask(*job, o.status_timeout_s);
  if (!rows.ok()) {
    std::fprintf(stderr, "hooprun --status: asking job %d: %s\n", job->value("pid", 0),
                 rows.status().message().c_str());
    return 1;
  }
  std::printf("job of hooprun %d, %zu rank%s: %s\n", job->value("pid", 0), rows->size(), rows->size() == 1 ? "" : "s",
              job->value("command", std::string()).c_str());
  const double longest = PrintTable(*rows, o.status_timeout_s);
  const bool silent = std::any_of(rows->begin(), rows->end(), [](const Row& r) { return !r.answer.is_object(); });
  if (longest < kHungAfterS && !silent) {
    std::printf("no rank has waited %.0f s in one operation: the job is moving\n", kHungAfterS);
    return 0;
  }
  return PrintFinding(*rows);
}

}  // namespace hoop::run
