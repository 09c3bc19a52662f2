// hooprun as a user meets it: help, bad arguments, the environment it gives ranks, output
// prefixes, a failing rank, --timeout, Ctrl-C, a reader that stops reading (what ranks leave
// behind: hooprun_cleanup_test.cc). Every run is time-bounded and must leave no process behind.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "tests/support/proc.h"

using namespace hoop::test;

TEST_CASE("hooprun --help and argument errors", "[hooprun]") {
  auto h = RunProc({Bin("hooprun"), "--help"});
  CHECK(h.exit_code == 0);
  CHECK(h.output.find("usage: hooprun -np N") != std::string::npos);
  auto none = RunProc({Bin("hooprun"), "/bin/true"});
  CHECK(none.exit_code == 2);
  CHECK(none.output.find("-np N is required") != std::string::npos);
  auto bad = RunProc({Bin("hooprun"), "-np", "two", "/bin/true"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("-np 'two'") != std::string::npos);
  // The ssh flags.
  CHECK(h.output.find("-p, --ssh-port PORT") != std::string::npos);
  CHECK(h.output.find("--start-timeout SECONDS") != std::string::npos);
  auto port = RunProc({Bin("hooprun"), "-np", "1", "-p", "70000", "/bin/true"});
  CHECK(port.exit_code == 2);
  CHECK(port.output.find("-p '70000': expected a port in [1, 65535]") != std::string::npos);
  auto wait = RunProc({Bin("hooprun"), "-np", "1", "--start-timeout", "-1", "/bin/true"});
  CHECK(wait.exit_code == 2);
  CHECK(wait.output.find("--start-timeout '-1': expected a positive number of seconds") != std::string::npos);
  auto store =
      RunProc({Bin("hooprun"), "-np", "1", "--store-address", "10.0.0.1", "--network-interface", "eth0", "/bin/true"});
  CHECK(store.exit_code == 2);
  CHECK(store.output.find("--store-address and --network-interface: give one of them") != std::string::npos);
}

namespace {
size_t Occurrences(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("a program that cannot run is found once, before any rank starts, with mpirun's codes", "[hooprun]") {
  auto missing = RunProc({Bin("hooprun"), "-np", "3", "/no/such/program"});
  INFO(missing.output);
  CHECK(missing.exit_code == 127);
  CHECK(missing.output == "hooprun: /no/such/program: No such file or directory\n");
  auto unknown = RunProc({Bin("hooprun"), "-np", "3", "no-such-program-anywhere"});
  CHECK(unknown.exit_code == 127);
  CHECK(Occurrences(unknown.output, "no-such-program-anywhere: command not found") == 1);
  // -x PATH=... is the PATH the ranks search, so it is the one checked.
  auto path = RunProc({Bin("hooprun"), "-np", "2", "-x", "PATH=/nonexistent", "sh", "-c", "true"});
  CHECK(path.exit_code == 127);
  const std::string file = "/tmp/hooprun-noexec-" + std::to_string(::getpid());
  { std::ofstream(file) << "#!/bin/sh\n"; }
  auto noexec = RunProc({Bin("hooprun"), "-np", "3", file});
  CHECK(noexec.exit_code == 126);
  CHECK(noexec.output == "hooprun: " + file + ": Permission denied\n");
  std::remove(file.c_str());
  auto dir = RunProc({Bin("hooprun"), "-np", "2", "/tmp"});
  CHECK(dir.exit_code == 126);
  CHECK(dir.output.find("/tmp: Is a directory") != std::string::npos);
}

TEST_CASE("every program hoop builds answers --version and --help", "[hooprun]") {
  // Every program in build/bin, the test helpers too: neither flag may start a rank, join a job or
  // hang (before, hoop-c-grow-test waited on a store for --help and the Catch2 programs refused
  // --version).
  // Built in every configuration; the walk must find them.
  const std::set<std::string> always = {"hooprun",        "hoop-perf",       "hoop-info",
                                        "hoop-test-rank", "hoop-c-api-test", "memcpy-limit"};
  std::set<std::string> seen;
  for (const auto& entry : std::filesystem::directory_iterator(Bin(""))) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || ::access(entry.path().c_str(), X_OK) != 0) continue;
    seen.insert(name);
    auto v = RunProc({entry.path().string(), "--version"}, Within(30));
    INFO(name << " --version: " << v.output);
    CHECK(v.exit_code == 0);
    CHECK(v.output == name + " (hoop) " HOOP_VERSION_STRING "\n");
    auto h = RunProc({entry.path().string(), "--help"}, Within(30));
    INFO(name << " --help: " << h.output);
    CHECK(h.exit_code == 0);
    CHECK(h.output.find("usage") != std::string::npos);
  }
  for (const auto& tool : always) CHECK(seen.count(tool) == 1);
}

TEST_CASE("the raw-limit tools refuse what is not a count", "[hooprun]") {
  // Before, "--version" was read as 0 MiB and loopback-limit "measured" it.
  for (const char* tool : {"memcpy-limit", "loopback-limit", "pingpong-limit"}) {
    INFO(tool);
    auto zero = RunProc({Bin(tool), "0"}, Within(30));
    CHECK(zero.exit_code == 2);
    CHECK(zero.output.find(std::string(tool) + ": ") == 0);
    CHECK(zero.output.find("'0': expected a count in [1, ") != std::string::npos);
    auto word = RunProc({Bin(tool), "many"}, Within(30));
    CHECK(word.exit_code == 2);
    auto typo = RunProc({Bin(tool), "--verison"}, Within(30));
    CHECK(typo.exit_code == 2);
    CHECK(typo.output.find("did you mean --version?") != std::string::npos);
    auto extra = RunProc({Bin(tool), "1", "1", "1"}, Within(30));
    CHECK(extra.exit_code == 2);
    CHECK(extra.output.find("expected at most 2 counts") != std::string::npos);
  }
}

TEST_CASE("more ranks than cores runs with a warning; what cannot work is refused", "[hooprun]") {
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  const std::string over = std::to_string(cores + 1);
  auto w = RunProc({Bin("hooprun"), "-np", over, "/bin/true"}, Within(30));
  CHECK(w.exit_code == 0);
  CHECK(w.output.find("hooprun: warning: " + over + " ranks on " + std::to_string(cores) + " core") !=
        std::string::npos);
  auto quiet = RunProc({Bin("hooprun"), "-np", over, "--oversubscribe", "/bin/true"}, Within(30));
  CHECK(quiet.exit_code == 0);
  CHECK(quiet.output.find("warning") == std::string::npos);
  auto fits = RunProc({Bin("hooprun"), "-np", "1", "/bin/true"});
  CHECK(fits.output.empty());
  // 4096 ranks: 8.6 TB of rings, more than any test machine has.
  auto huge = RunProc({Bin("hooprun"), "-np", "4096", "/bin/true"}, Within(30));
  CHECK(huge.exit_code == 2);
  CHECK(huge.output.find("hooprun: -np 4096: the shared-memory rings between every pair of ranks would need") == 0);
  const std::string crowd = std::to_string(64 * cores + 1);
  auto many = RunProc({Bin("hooprun"), "-np", crowd, "/bin/true"}, Within(30));
  CHECK(many.exit_code == 2);
  // (On a many-core machine the rings' memory may be what refuses it first.)
  CHECK((many.output.find("more than 64 ranks per core is not supported") != std::string::npos ||
         many.output.find("the shared-memory rings") != std::string::npos));
}

TEST_CASE("horovodrun's other flags: aliases, variables, changing nothing, or refused saying why", "[hooprun]") {
  auto r = RunProc({Bin("hooprun"), "--num-proc", "2", "--gloo", "--disable-cache", "--no-stall-check",
                    "--hierarchical-allreduce", "--tcp", "--gloo-timeout-seconds", "40", "--no-autotune",
                    "--log-hide-timestamp", "--prefix-output-with-timestamp", "--network-interfaces", "lo,eth0",
                    "/bin/sh", "-c", "echo got $HOOP_STALL_WARNING_S $HOOP_ALGO $HOOP_TRANSPORT $HOOP_TIMEOUT"},
                   Within(60));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("[0] got 0 hierarchical tcp 40") != std::string::npos);
  CHECK(r.output.find("[1] got 0 hierarchical tcp 40") != std::string::npos);
  // 0 leaves HOOP_TIMEOUT alone (horovodrun's 0: no shutdown).
  auto zero = RunProc({Bin("hooprun"), "-np", "1", "--stall-check-shutdown-time-seconds", "0", "/bin/sh", "-c",
                       "echo timeout=${HOOP_TIMEOUT:-unset}"});
  CHECK(zero.output.find("timeout=unset") != std::string::npos);
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused = {
      {{"--mpi"}, "--mpi: hooprun starts the ranks itself and needs no MPI"},
      {{"--mpi-args", "-x FOO"}, "--mpi-args: hoop has no MPI"},
      {{"--config-file", "c.yaml"}, "--config-file: hooprun reads no YAML config"},
      {{"--autotune"}, "--autotune: hoop does not tune its fusion settings"},
      {{"--num-nccl-streams", "2"}, "--num-nccl-streams: hoop does not use NCCL"},
      {{"--gloo-timeout-seconds", "soon"}, "--gloo-timeout-seconds 'soon': expected seconds"},
  };
  for (const auto& [flags, want] : refused) {
    std::vector<std::string> args = {Bin("hooprun"), "-np", "1"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("/bin/true");
    auto bad = RunProc(args);
    INFO(bad.output);
    CHECK(bad.exit_code == 2);
    CHECK(bad.output.find("hooprun: " + want) == 0);
  }
  auto cb = RunProc({Bin("hooprun"), "--check-build"});
  INFO(cb.output);
  CHECK(cb.exit_code == 0);
  CHECK(cb.output.find("Available Frameworks:") != std::string::npos);
  CHECK(cb.output.find("[X] hoop (hooprun's store") != std::string::npos);
  CHECK(cb.output.find("[X] tcp (transport)") != std::string::npos);
  CHECK(RunProc({Bin("hooprun"), "-cb"}).output == cb.output);
}

TEST_CASE("horovodrun's tensor fusion flags set the variables for every rank, checked first", "[hooprun]") {
  auto r = RunProc({Bin("hooprun"), "-np", "2", "--fusion-threshold-mb", "32", "--cycle-time-ms", "5",
                    "--cache-capacity", "0", "--timeline-filename", "/tmp/tl.json", "--timeline-mark-cycles",
                    "--stall-check-warning-time-seconds", "10", "--log-level", "debug", "/bin/sh", "-c",
                    "echo $HOOP_FUSION_THRESHOLD $HOOP_CYCLE_TIME_MS $HOOP_CACHE_CAPACITY $HOOP_TIMELINE "
                    "$HOOP_TIMELINE_MARK_CYCLES $HOOP_STALL_WARNING_S $HOOP_LOG_LEVEL"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("[0] 33554432 5 0 /tmp/tl.json 1 10 debug") != std::string::npos);
  CHECK(r.output.find("[1] 33554432 5 0 /tmp/tl.json 1 10 debug") != std::string::npos);
  auto bad = RunProc({Bin("hooprun"), "-np", "2", "--log-level", "chatty", "/bin/true"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("--log-level 'chatty': HOOP_LOG_LEVEL='chatty': expected none, error, warn, info or debug") !=
        std::string::npos);
  auto mb = RunProc({Bin("hooprun"), "-np", "2", "--fusion-threshold-mb", "lots", "/bin/true"});
  CHECK(mb.exit_code == 2);
  CHECK(mb.output.find("--fusion-threshold-mb 'lots': expected megabytes in [0, 4096]") != std::string::npos);
  // horovodrun's and mpirun's habits: levels in capitals, WARNING, TRACE; --allow-run-as-root.
  for (const char* level : {"DEBUG", "WARNING", "TRACE", "Info"}) {
    auto l = RunProc({Bin("hooprun"), "-np", "1", "--log-level", level, "--allow-run-as-root", Bin("hoop-perf"),
                      "allreduce", "-b", "8", "-e", "8", "-R", "1"},
                     Within(60));
    INFO(level << ": " << l.output);
    CHECK(l.exit_code == 0);
  }
  auto mca = RunProc({Bin("hooprun"), "-np", "2", "--mca", "btl_tcp_if_include", "lo", "/bin/true"});
  CHECK(mca.exit_code == 2);
  CHECK(mca.output.find("hoop has no MCA parameters; its settings are HOOP_* variables") != std::string::npos);
}

TEST_CASE("hooprun gives every rank its environment and prefixes its output", "[hooprun]") {
  ProcOptions o;
  o.env["FROM_SHELL"] = "shellvalue";
  auto r = RunProc({Bin("hooprun"), "-np", "3", "-x", "EXTRA=1", "-x", "FROM_SHELL", "/bin/sh", "-c",
                    "echo rank=$HOOP_RANK size=$HOOP_SIZE local=$HOOP_LOCAL_RANK/$HOOP_LOCAL_SIZE "
                    "extra=$EXTRA shell=$FROM_SHELL store=${HOOP_STORE%%:*} token=${#HOOP_JOB_TOKEN}; echo err >&2"},
                   o);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  for (int k = 0; k < 3; ++k) {
    std::string line = "[" + std::to_string(k) + "] rank=" + std::to_string(k) + " size=3 local=" + std::to_string(k) +
                       "/3 extra=1 shell=shellvalue store=tcp token=32";
    CHECK(r.output.find(line) != std::string::npos);
    CHECK(r.output.find("[" + std::to_string(k) + "] err") != std::string::npos);
  }
  auto t = RunProc({Bin("hooprun"), "-np", "1", "--tag-output", "/bin/sh", "-c", "echo out; echo err >&2"});
  CHECK(t.output.find("[0]<stdout>: out") != std::string::npos);
  CHECK(t.output.find("[0]<stderr>: err") != std::string::npos);
  // torchrun's MASTER_PORT: the same for every rank, free, and below the kernel's ephemeral range
  // (where no outgoing connection can take it before torch's store binds it).
  int first_ephemeral = 32768;
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  range >> first_ephemeral;
  for (int run = 0; run < 3; ++run) {
    auto m = RunProc({Bin("hooprun"), "-np", "2", "/bin/sh", "-c", "echo master=$MASTER_ADDR:$MASTER_PORT"});
    INFO(m.output);
    const size_t at = m.output.find("master=127.0.0.1:");
    REQUIRE(at != std::string::npos);
    const int port = std::atoi(m.output.c_str() + at + 17);
    CHECK((port >= 10000 && port < first_ephemeral));
    CHECK(m.output.find("[1] master=127.0.0.1:" + std::to_string(port)) != std::string::npos);
  }
}

TEST_CASE("hooprun stops the job when a rank fails and says which", "[hooprun]") {
  std::string marker = NewMarker();
  auto r = RunProc(
      {Bin("hooprun"), "-np", "4", "/bin/sh", "-c", "if [ $HOOP_RANK = 1 ]; then exit 3; fi; sleep 60; : " + marker},
      Within(30));
  INFO(r.output);
  CHECK(r.exit_code == 3);
  CHECK(r.seconds < 10);
  CHECK(r.output.find("hooprun: rank 1 (pid") != std::string::npos);
  CHECK(r.output.find("exited with code 3; stopped the other ranks") != std::string::npos);
  CHECK(WaitGone(marker, 5) == 0);
}

TEST_CASE("hooprun names the rank that complained first, though others' exits are reaped before it", "[hooprun]") {
  // Rank 0 says what went wrong and exits after ranks 1 and 2, which fail silently (as ranks do
  // that lose their peer): the last line names rank 0, not the first exit reaped.
  auto r = RunProc({Bin("hooprun"), "-np", "3", "/bin/sh", "-c",
                    "if [ $HOOP_RANK = 0 ]; then echo 'rank 0: the real error' >&2; sleep 0.4; exit 1; fi; "
                    "sleep 0.2; exit 1"},
                   Within(30));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("hooprun: rank 0 (pid") != std::string::npos);
  CHECK(r.output.find("hooprun: rank 1 (pid") == std::string::npos);
  CHECK(r.output.find("hooprun: rank 2 (pid") == std::string::npos);
}

TEST_CASE("hooprun --enable-recovery: a failed rank is reported and the others go on", "[hooprun]") {
  // Rank 1 fails at once; the others finish 6 s later (past the grace period that would stop them).
  auto r = RunProc({Bin("hooprun"), "-np", "3", "--enable-recovery", "/bin/sh", "-c",
                    "if [ $HOOP_RANK = 1 ]; then exit 3; fi; sleep 6; echo finished"},
                   Within(30));
  INFO(r.output);
  CHECK(r.exit_code == 3);
  CHECK(r.seconds >= 6);
  CHECK(r.output.find("[0] finished") != std::string::npos);
  CHECK(r.output.find("[2] finished") != std::string::npos);
  CHECK(r.output.find("exited with code 3; the other ranks go on (--enable-recovery)") != std::string::npos);
  CHECK(r.output.find("exited with code 3; the other ranks went on (--enable-recovery)") != std::string::npos);
  // Ctrl-C still stops them all.
  auto c = RunProc({Bin("hooprun"), "-np", "2", "--enable-recovery", "/bin/sh", "-c", "sleep 60"},
                   SignalAfter(SIGINT, 1, 30));
  CHECK(c.exit_code == 130);
  CHECK(c.seconds < 15);
}

TEST_CASE("hooprun --timeout stops a job that runs too long", "[hooprun]") {
  std::string marker = NewMarker();
  auto r =
      RunProc({Bin("hooprun"), "-np", "2", "--timeout", "1", "/bin/sh", "-c", "sleep 60; : " + marker}, Within(30));
  INFO(r.output);
  CHECK(r.exit_code == 124);
  CHECK(r.seconds < 3);  // SIGTERM at the timeout itself, not after a grace period
  CHECK(r.output.find("ran past --timeout") != std::string::npos);
  CHECK(WaitGone(marker, 5) == 0);
}

TEST_CASE("Ctrl-C stops every rank", "[hooprun]") {
  std::string marker = NewMarker();
  ProcOptions o = SignalAfter(SIGINT, 1.0, 30);
  // The ranks ignore SIGINT themselves, so hooprun's SIGTERM (then SIGKILL) is what stops them.
  auto r = RunProc({Bin("hooprun"), "-np", "3", "/bin/sh", "-c", "trap '' INT; sleep 60; : " + marker}, o);
  INFO(r.output);
  CHECK(r.exit_code == 130);
  CHECK(r.seconds < 8);
  CHECK(r.output.find("interrupted") != std::string::npos);
  CHECK(WaitGone(marker, 5) == 0);
}

TEST_CASE("SIGTERM stops every rank and exits 143, as a shell reports a terminated job", "[hooprun]") {
  std::string marker = NewMarker();
  ProcOptions o = SignalAfter(SIGTERM, 1.0, 30);
  auto r = RunProc({Bin("hooprun"), "-np", "3", "/bin/sh", "-c", "trap '' TERM; sleep 60; : " + marker}, o);
  INFO(r.output);
  CHECK(r.exit_code == 143);
  CHECK(r.seconds < 8);
  CHECK(r.output.find("hooprun: interrupted by Terminated; stopped every rank") != std::string::npos);
  CHECK(WaitGone(marker, 5) == 0);
}

namespace {
// Runs argv with stdout and stderr on a pipe that nobody reads, as a stopped pager would hold it;
// returns how long it took to exit and its wait status, or kills it at `bound`.
std::pair<double, int> RunWithStalledReader(const std::vector<std::string>& argv, double bound) {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(p[1], 1);
    ::dup2(p[1], 2);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(p[1]);
  int status = 0;
  double secs = 0;
  while (true) {
    secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    if (secs > bound) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::close(p[0]);
  return {secs, status};
}
}  // namespace

TEST_CASE("a reader that stops reading does not stop hooprun: --timeout is on time", "[hooprun]") {
  // Each rank prints without end; nobody reads hooprun's output. Before, hooprun blocked in its
  // write and never got to the timeout.
  std::string marker = NewMarker();
  auto [secs, status] =
      RunWithStalledReader({Bin("hooprun"), "-np", "2", "--timeout", "1", "/usr/bin/yes", marker}, 30);
  CHECK(secs < 10);  // 1 s, the 2 s grace, SIGTERM, then at most 2 s waiting on the reader
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 124);
  CHECK(WaitGone(marker, 5) == 0);
}

TEST_CASE("hooprun out of file descriptors sheds store connections instead of spinning", "[hooprun]") {
  // hooprun's soft limit on descriptors is 40; rank 0 holds ~200 silent connections to its store
  // and measures hooprun's CPU time meanwhile (hostile_rank.cc). Before: a full core.
  if (::access("/usr/bin/prlimit", X_OK) != 0) {
    WARN("SKIPPED: prlimit (util-linux) is not installed");
    return;
  }
  std::string marker = NewMarker();
  ProcOptions o = Within(60);
  o.env["HOOP_TRANSPORT"] = "tcp";
  auto r = RunProc(
      {"/usr/bin/prlimit", "--nofile=40:4096", Bin("hooprun"), "-np", "2", Bin("hoop-test-rank"), "fd_flood", marker},
      o);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("rank 0: fd_flood ok") != std::string::npos);
  CHECK(r.output.find("Too many open files") != std::string::npos);  // it did run out, and said so
  CHECK(WaitGone(marker, 5) == 0);
}

// -H and --hostfile with this host (ranks start here only for now): the slots bound -np and are
// its default, every rank gets its local and cross rank, and what cannot be run is refused before
// anything starts, naming the host or the file's line.
TEST_CASE("hooprun -H and --hostfile on this host: slots, -np, the ranks' places, refusals", "[hooprun][hosts]") {
  const std::string show =
      "echo rank=$HOOP_RANK/$HOOP_SIZE local=$HOOP_LOCAL_RANK/$HOOP_LOCAL_SIZE "
      "cross=$HOOP_CROSS_RANK/$HOOP_CROSS_SIZE";
  auto three = RunProc({Bin("hooprun"), "-H", "localhost:3", "sh", "-c", show}, Within(60));
  INFO(three.output);
  CHECK(three.exit_code == 0);
  for (int r = 0; r < 3; ++r)
    CHECK(three.output.find("[" + std::to_string(r) + "] rank=" + std::to_string(r) + "/3 local=" + std::to_string(r) +
                            "/3 cross=0/1") != std::string::npos);
  const std::string file = "/tmp/hooprun-hosts-" + std::to_string(::getpid());
  { std::ofstream(file) << "# this machine\n127.0.0.1 slots=4   # all of it\n"; }
  auto fewer = RunProc({Bin("hooprun"), "--hostfile", file, "-np", "2", "sh", "-c", show}, Within(60));
  INFO(fewer.output);
  CHECK(fewer.exit_code == 0);
  CHECK(fewer.output.find("[1] rank=1/2 local=1/2 cross=0/1") != std::string::npos);
  auto over = RunProc({Bin("hooprun"), "--hostfile", file, "-np", "5", "/bin/true"}, Within(30));
  CHECK(over.exit_code == 2);
  CHECK(over.output ==
        "hooprun: -np 5 is more ranks than the 4 slots of the host given (--oversubscribe places the rest beyond "
        "them, as mpirun's)\n");
  { std::ofstream(file) << "localhost slots=2\nnode-x cores=4\n"; }
  auto badfile = RunProc({Bin("hooprun"), "--hostfile", file, "/bin/true"}, Within(30));
  CHECK(badfile.exit_code == 2);
  CHECK(badfile.output.find("hooprun: " + file + ":2: unexpected 'cores=4'") != std::string::npos);
  std::remove(file.c_str());
  auto missing = RunProc({Bin("hooprun"), "--hostfile", file, "/bin/true"}, Within(30));
  CHECK(missing.exit_code == 2);
  CHECK(missing.output.find("--hostfile " + file + ": cannot read it") != std::string::npos);
  // Another host is reached over ssh first: one that cannot be is named, with ssh's words.
  auto remote = RunProc(
      {Bin("hooprun"), "-H", "localhost:1,far-away-host.invalid:2", "--start-timeout", "10", "/bin/true"}, Within(30));
  CHECK(remote.exit_code == 1);
  CHECK(remote.output.find("hooprun: cannot reach every host over ssh") == 0);
  CHECK(remote.output.find("far-away-host.invalid: ssh: Could not resolve hostname far-away-host.invalid") !=
        std::string::npos);
  auto twice = RunProc({Bin("hooprun"), "-H", "localhost:1,127.0.0.1:1", "/bin/true"}, Within(30));
  CHECK(twice.exit_code == 2);
  CHECK(twice.output.find("are both this host") != std::string::npos);
  auto both = RunProc({Bin("hooprun"), "-H", "localhost", "--hostfile", file, "/bin/true"}, Within(30));
  CHECK(both.exit_code == 2);
  CHECK(both.output.find("-H and --hostfile: give one of them") != std::string::npos);
  auto map = RunProc({Bin("hooprun"), "-H", "localhost:2", "--map-by", "core", "/bin/true"}, Within(30));
  CHECK(map.exit_code == 2);
  CHECK(map.output.find("--map-by 'core': expected slot or node") != std::string::npos);
}

// --bind-to and --report-bindings on this host (hwloc's view of it), and hoop-info --topology.
TEST_CASE("hooprun binds ranks and says where; hoop-info --topology", "[hooprun][topology]") {
  auto info = RunProc({Bin("hoop-info"), "--topology"}, Within(30));
  INFO(info.output);
  if (info.exit_code != 0) {  // a build without hwloc says so, and binds nothing
    CHECK(info.output.find("built without hwloc") != std::string::npos);
    return;
  }
  CHECK(info.output.find("topology: ") == 0);
  CHECK(info.output.find("  core 0: cpus ") != std::string::npos);
  const std::string show = "grep Cpus_allowed_list /proc/self/status";
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  auto def = RunProc({Bin("hooprun"), "-np", "2", "--report-bindings", "/bin/true"}, Within(60));
  INFO(def.output);
  CHECK(def.exit_code == 0);
  if (cores >= 2) {  // the default: the NUMA node (or package) of the rank's core
    CHECK((def.output.find("hooprun: rank 1 bound to numa: cpus ") != std::string::npos ||
           def.output.find("hooprun: rank 1 bound to socket: cpus ") != std::string::npos));
  }
  auto two =
      RunProc({Bin("hooprun"), "-np", "2", "--bind-to", "core", "--report-bindings", "sh", "-c", show}, Within(60));
  INFO(two.output);
  CHECK(two.exit_code == 0);
  if (cores >= 2) {  // a core each, rank i on core i
    CHECK(two.output.find("hooprun: rank 0 bound to core: cpus ") != std::string::npos);
    CHECK(two.output.find("hooprun: rank 1 bound to core: cpus ") != std::string::npos);
    const std::string line0 = LineOf(two.output, "[0] Cpus_allowed_list:");
    const std::string line1 = LineOf(two.output, "[1] Cpus_allowed_list:");
    CHECK(line0 != line1);
    CHECK(line0.find('-') == std::string::npos);  // one core's processors (one per core here)
  }
  auto none =
      RunProc({Bin("hooprun"), "-np", "2", "--bind-to", "none", "--report-bindings", "sh", "-c", show}, Within(60));
  CHECK(none.exit_code == 0);
  CHECK(none.output.find("hooprun: rank 1 not bound (--bind-to none)") == std::string::npos);  // none: nothing to say
  const std::string all = LineOf(none.output, "[0] Cpus_allowed_list:");
  const std::string all1 = LineOf(none.output, "[1] Cpus_allowed_list:");
  REQUIRE(all.size() > 4);
  CHECK(all.substr(4) == all1.substr(std::min<size_t>(4, all1.size())));  // the same set, past "[r] "
  auto over = RunProc({Bin("hooprun"), "-np", std::to_string(cores + 1), "--bind-to", "core", "/bin/true"}, Within(30));
  CHECK(over.exit_code == 2);
  CHECK(over.output.find("--bind-to core: " + std::to_string(cores + 1) + " ranks on this host's") !=
        std::string::npos);
  auto hw =
      RunProc({Bin("hooprun"), "-np", "2", "--bind-to", "hwthread", "--report-bindings", "sh", "-c", show}, Within(60));
  INFO(hw.output);
  CHECK(hw.exit_code == 0);
  if (cores >= 2) {  // one hardware thread each
    CHECK(hw.output.find("hooprun: rank 1 bound to hwthread: cpus ") != std::string::npos);
    CHECK(LineOf(hw.output, "[0] Cpus_allowed_list:").find_first_of(",-") == std::string::npos);
  }
  auto bad = RunProc({Bin("hooprun"), "-np", "1", "--bind-to", "thread", "/bin/true"}, Within(30));
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("--bind-to 'thread': expected none, core, hwthread, numa or socket") != std::string::npos);
}

// --output-filename: each rank's lines, unprefixed, in DIR/rank.N/{stdout,stderr} (N padded so
// the folders sort), the terminal unchanged; a folder that cannot be made stops the job first.
TEST_CASE("hooprun --output-filename writes every rank's output to its own files", "[hooprun][output]") {
  const std::string dir = "/tmp/hooprun-out-" + std::to_string(::getpid());
  auto r = RunProc({Bin("hooprun"), "-np", "11", "--oversubscribe", "--output-filename", dir, "sh", "-c",
                    "echo out $HOOP_RANK; echo err $HOOP_RANK >&2; printf unfinished"},
                   Within(60));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("[10] out 10") != std::string::npos);  // the terminal still gets it all
  auto read = [](const std::string& file) {
    std::ifstream f(file);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  };
  CHECK(read(dir + "/rank.03/stdout") == "out 3\nunfinished\n");
  CHECK(read(dir + "/rank.03/stderr") == "err 3\n");
  CHECK(read(dir + "/rank.10/stdout") == "out 10\nunfinished\n");
  // Run again: the files are truncated, not appended to.
  auto again = RunProc({Bin("hooprun"), "-np", "1", "--output-filename", dir, "sh", "-c", "echo second"}, Within(60));
  CHECK(again.exit_code == 0);
  CHECK(read(dir + "/rank.0/stdout") == "second\n");
  std::filesystem::remove_all(dir);
  auto bad = RunProc({Bin("hooprun"), "-np", "2", "--output-filename", "/proc/no/such/dir", "sh", "-c", "echo ran"},
                     Within(30));
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("hooprun: --output-filename /proc/no/such/dir: cannot create it") != std::string::npos);
  CHECK(bad.output.find("ran") == std::string::npos);
}

// --wdir runs the ranks in a folder (a relative program found from there) and --verbose says
// the plan, never the job token; a long argument by its start and length.
TEST_CASE("hooprun --wdir and --verbose", "[hooprun][output]") {
  const std::string dir = "/tmp/hooprun-wdir-" + std::to_string(::getpid());
  ::mkdir(dir.c_str(), 0755);
  { std::ofstream(dir + "/prog") << "#!/bin/sh\necho here: $(pwd) token: ${#HOOP_JOB_TOKEN} args: $#\n"; }
  ::chmod((dir + "/prog").c_str(), 0755);
  const std::string long_arg = "b64" + std::string(5000, 'x');
  auto r = RunProc({Bin("hooprun"), "-np", "2", "--verbose", "--wdir", dir, "./prog", "short", long_arg}, Within(60));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("[1] here: " + dir + " token: 32 args: 2") != std::string::npos);
  CHECK(r.output.find("hooprun: plan: 2 ranks on 1 host; store tcp://127.0.0.1:") != std::string::npos);
  CHECK(r.output.find("hooprun: rank 1: host localhost, local rank 1 of 2, cross rank 0 of 1, ") != std::string::npos);
  CHECK(r.output.find("./prog short b64" + std::string(45, 'x') + "...(5003 characters) in " + dir) !=
        std::string::npos);
  CHECK(r.output.find(std::string(100, 'x')) == std::string::npos);
  CHECK(r.output.find("hooprun: started rank 0 (pid ") != std::string::npos);
  // The token itself (32 hex digits) appears nowhere in what hooprun printed.
  const std::string text = r.output;
  bool token_shown = false;
  for (size_t i = 0; i + 32 <= text.size() && !token_shown; ++i)
    token_shown = text.find_first_not_of("0123456789abcdef", i) >= i + 32;
  CHECK_FALSE(token_shown);
  auto missing = RunProc({Bin("hooprun"), "-np", "1", "--wdir", dir + "/nope", "/bin/true"}, Within(30));
  CHECK(missing.exit_code == 2);
  CHECK(missing.output == "hooprun: --wdir " + dir + "/nope: No such file or directory\n");
  std::filesystem::remove_all(dir);
}

TEST_CASE("mpirun's habits: --oversubscribe past -H slots, -N, --timestamp-output", "[hooprun][hosts]") {
  auto over = RunProc({Bin("hooprun"), "-H", "localhost:2", "-np", "3", "--oversubscribe", "sh", "-c",
                       "echo rank $HOOP_RANK of $HOOP_SIZE local $HOOP_LOCAL_SIZE"},
                      Within(60));
  INFO(over.output);
  CHECK(over.exit_code == 0);
  CHECK(over.output.find("[2] rank 2 of 3 local 3") != std::string::npos);
  auto refused = RunProc({Bin("hooprun"), "-H", "localhost:2", "-np", "3", "/bin/true"}, Within(30));
  CHECK(refused.exit_code == 2);
  CHECK(refused.output.find("(--oversubscribe places the rest beyond them, as mpirun's)") != std::string::npos);
  auto per = RunProc({Bin("hooprun"), "-N", "3", "--oversubscribe", "sh", "-c", "echo size $HOOP_SIZE"}, Within(60));
  INFO(per.output);
  CHECK(per.exit_code == 0);
  CHECK(per.output.find("[2] size 3") != std::string::npos);
  auto stamped = RunProc({Bin("hooprun"), "-np", "2", "--timestamp-output", "echo", "hi"}, Within(60));
  INFO(stamped.output);
  CHECK(stamped.exit_code == 0);
  // "YYYY-MM-DD HH:MM:SS.mmm [r] hi" on every line
  for (const char* rank : {"[0] hi", "[1] hi"}) {
    const std::string line = LineOf(stamped.output, rank);
    REQUIRE(line.size() == 24 + 6);
    CHECK(line[4] == '-');
    CHECK(line[10] == ' ');
    CHECK(line[19] == '.');
    CHECK(line.substr(24) == rank);
  }
}
