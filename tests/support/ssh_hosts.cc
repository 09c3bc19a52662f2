#include "tests/support/ssh_hosts.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace hoop::test {
namespace {

bool Sh(const std::string& cmd) { return std::system(("{ " + cmd + "; } >/dev/null 2>&1").c_str()) == 0; }

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

SshHosts::SshHosts(int n) {
  if (::geteuid() != 0) {
    why_ = "needs root (network namespaces)";
    return;
  }
  if (::access("/usr/sbin/sshd", X_OK) != 0 || ::access("/usr/bin/ssh", X_OK) != 0 ||
      ::access("/usr/bin/ssh-keygen", X_OK) != 0) {
    why_ = "no /usr/sbin/sshd or ssh (scripts/setup.sh installs openssh-server and openssh-client)";
    return;
  }
  const int id = 20 + static_cast<int>(::getpid() % 200);
  id_ = std::to_string(id);
  char tmpl[] = "/tmp/hoop-ssh-hosts-XXXXXX";
  if (!::mkdtemp(tmpl)) {
    why_ = "mkdtemp failed";
    return;
  }
  dir_ = tmpl;
  const std::string sw = "hshsw" + id_;
  // Left by an earlier run with this id that did not end its own way: gone first.
  std::string stale = "ip netns del " + sw;
  for (int i = 0; i < 8; ++i) {
    const std::string ns = "hsh" + id_ + "_" + std::to_string(i);
    stale += "; ip netns pids " + ns + " 2>/dev/null | xargs -r kill -9; ip netns del " + ns;
  }
  Sh(stale);
  std::string cmd =
      "ip netns add " + sw + " && ip -n " + sw + " link add br0 type bridge && ip -n " + sw + " link set br0 up";
  for (int i = 0; i < n; ++i) {
    const std::string ns = "hsh" + id_ + "_" + std::to_string(i), v = "hv" + id_ + "_" + std::to_string(i),
                      p = "hp" + id_ + "_" + std::to_string(i);
    ns_.push_back(ns);
    addr_.push_back("10.79." + id_ + "." + std::to_string(i + 1));
    name_.push_back("hoop-h" + std::to_string(i));
    cmd += " && ip netns add " + ns + " && ip link add " + v + " type veth peer name " + p + " && ip link set " + v +
           " netns " + ns + " && ip link set " + p + " netns " + sw + " && ip -n " + sw + " link set " + p +
           " master br0 && ip -n " + sw + " link set " + p + " up && ip -n " + ns + " addr add " + addr_.back() +
           "/24 dev " + v + " && ip -n " + ns + " link set " + v + " up && ip -n " + ns + " link set lo up";
  }
  if (!Sh(cmd)) {
    why_ = "cannot create network namespaces here (needs iproute2 and CAP_NET_ADMIN)";
    return;
  }
  if (!Sh("ssh-keygen -q -t ed25519 -N '' -f " + dir_ + "/host_key && ssh-keygen -q -t ed25519 -N '' -f " + dir_ +
          "/id && cp " + dir_ + "/id.pub " + dir_ + "/authorized_keys && mkdir -p /run/sshd")) {
    why_ = "ssh-keygen failed";
    return;
  }
  for (int i = 1; i < n; ++i) {
    const std::string cfg = dir_ + "/sshd_config." + std::to_string(i), log = dir_ + "/sshd." + std::to_string(i);
    std::ofstream(cfg) << "ListenAddress " << addr_[static_cast<size_t>(i)] << "\nPort 22\nHostKey " << dir_
                       << "/host_key\nAuthorizedKeysFile " << dir_ << "/authorized_keys\nPidFile none\nUsePAM no\n"
                       << "StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                       << "PermitRootLogin prohibit-password\n";
    const auto argv = Run(i, {"/usr/sbin/sshd", "-D", "-e", "-f", cfg});
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> a;
      for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
      a.push_back(nullptr);
      ::execvp(a[0], a.data());
      ::_exit(127);
    }
    sshd_.push_back(pid);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (Slurp(log).find("Server listening") == std::string::npos) {
      if (std::chrono::steady_clock::now() > until) {
        why_ = "sshd on host " + std::to_string(i) + " did not start: " + Slurp(log);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

SshHosts::~SshHosts() {
  for (pid_t p : sshd_) {
    ::kill(-p, SIGKILL);
    ::waitpid(p, nullptr, 0);
  }
  for (size_t i = 0; i < ns_.size(); ++i) KillHost(static_cast<int>(i));
  for (const auto& ns : ns_) Sh("ip netns del " + ns);
  if (!id_.empty()) Sh("ip netns del hshsw" + id_);
  if (!dir_.empty()) Sh("rm -rf " + dir_);
}

std::vector<std::string> SshHosts::Run(int i, const std::vector<std::string>& command) const {
  std::vector<std::string> argv{"/usr/sbin/ip",
                                "netns",
                                "exec",
                                ns_[static_cast<size_t>(i)],
                                "/usr/bin/unshare",
                                "--uts",
                                "/bin/sh",
                                "-c",
                                "hostname " + name_[static_cast<size_t>(i)] + " && exec \"$@\"",
                                "sh"};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

std::vector<std::string> SshHosts::SshFlags() const {
  return {"-i", dir_ + "/id", "--ssh-args",
          "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"};
}

void SshHosts::KillHost(int i) {
  if (static_cast<size_t>(i) < ns_.size()) Sh("ip netns pids " + ns_[static_cast<size_t>(i)] + " | xargs -r kill -9");
}

bool SshHosts::ShapeHost(int i, const std::string& qdisc) {
  if (static_cast<size_t>(i) >= ns_.size()) return false;
  return Sh("tc -n " + ns_[static_cast<size_t>(i)] + " qdisc replace dev hv" + id_ + "_" + std::to_string(i) +
            " root " + qdisc);
}

int SshHosts::ProcessesOn(int i) const {
  if (static_cast<size_t>(i) >= ns_.size()) return 0;
  FILE* p = ::popen(("ip netns pids " + ns_[static_cast<size_t>(i)] + " 2>/dev/null | wc -l").c_str(), "r");
  if (!p) return -1;
  int n = -1;
  if (std::fscanf(p, "%d", &n) != 1) n = -1;
  ::pclose(p);
  return n;
}

std::string SshHosts::ProcessesLeftOn(int i, int want, double seconds) const {
  if (static_cast<size_t>(i) >= ns_.size()) return "";
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (ProcessesOn(i) > want && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const std::string cmd = "for p in $(ip netns pids " + ns_[static_cast<size_t>(i)] +
                          " 2>/dev/null); do echo \"$p $(tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null)\"; done";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return "";
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  ::pclose(p);
  return out;
}

}  // namespace hoop::test
