#include "tools/hooprun/discovery.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tools/hooprun/ranks.h"

namespace hoop::run {
namespace {

using Clock = std::chrono::steady_clock;

// "--host-discovery-script 'find-hosts' exited with code 2" and the like.
Status Failed(const std::string& script, const std::string& how) {
  return Unavailable("--host-discovery-script '" + script + "' " + how);
}

}  // namespace

DiscoveryRun::~DiscoveryRun() {
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (fd_ >= 0) ::close(fd_);
}

Status DiscoveryRun::Start(const std::string& script, int default_slots) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return ErrnoStatus(Code::kInternal, "pipe", errno);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out[0]);
    ::close(out[1]);
    return ErrnoStatus(Code::kInternal, "fork", errno);
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    ::dup2(out[1], STDOUT_FILENO);
    ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  ::fcntl(out[0], F_SETFL, ::fcntl(out[0], F_GETFL) | O_NONBLOCK);
  pid_ = pid;
  fd_ = out[0];
  script_ = script;
  default_slots_ = default_slots;
  out_.clear();
  status_.reset();
  killed_ = false;
  started_ = Clock::now();
  return Status::Ok();
}

void DiscoveryRun::Read() {
  char buf[4096];
  while (fd_ >= 0) {
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n > 0 && out_.size() < (1u << 20)) out_.append(buf, static_cast<size_t>(n));
    if (n > 0) continue;
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      ::close(fd_);
      fd_ = -1;
    }
    break;
  }
  if (pid_ > 0 && !status_ && !killed_ && Clock::now() - started_ > kDiscoveryLimit) {
    ::kill(-pid_, SIGKILL);
    killed_ = true;
  }
}

void DiscoveryRun::Reaped(int status) { status_ = status; }

std::optional<StatusOr<std::vector<HostSlots>>> DiscoveryRun::Result() {
  if (pid_ <= 0 || !status_) return std::nullopt;
  if (fd_ >= 0 && !killed_) {
    Read();
    if (fd_ >= 0) return std::nullopt;  // a child of the script still holds the pipe: next turn
  }
  if (fd_ >= 0) ::close(fd_), fd_ = -1;
  pid_ = -1;
  if (killed_)
    return StatusOr<std::vector<HostSlots>>(
        Failed(script_, "ran longer than " +
                            std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kDiscoveryLimit).count()) +
                            " s; killed it"));
  if (!ExitedCleanly(*status_)) return StatusOr<std::vector<HostSlots>>(Failed(script_, DescribeExit(*status_)));
  return ParseDiscovered(out_, default_slots_);
}

StatusOr<std::vector<HostSlots>> DiscoverNow(const std::string& script, int default_slots) {
  DiscoveryRun run;
  HOOP_RETURN_IF_ERROR(run.Start(script, default_slots));
  while (true) {
    pollfd p{-1, 0, 0};
    ::poll(&p, 0, 20);
    run.Read();
    int st = 0;
    if (run.running() && ::waitpid(run.pid(), &st, WNOHANG) == run.pid()) run.Reaped(st);
    if (auto r = run.Result()) return std::move(*r);
  }
}

}  // namespace hoop::run
