// horovodrun's flags that have no hooprun flag of their own, so that a horovodrun command line
// runs under hooprun with only its first word changed, or stops at once saying why:
//  - a meaning hoop has: the flag sets the HOOP_* variable that has it, for every rank
//    (--no-stall-check: HOOP_STALL_WARNING_S=0; --hierarchical-allreduce: HOOP_ALGO=hierarchical;
//    --tcp: HOOP_TRANSPORT=tcp; --gloo-timeout-seconds S: HOOP_TIMEOUT=S; ...);
//  - a request for what hoop always does (--gloo: hoop's own controller, no MPI; --disable-cache:
//    there are no start-up checks to cache; the --no-* of the above): taken, changing nothing;
//  - a request for what hoop does not do (--mpi, autotuning, NCCL streams, a YAML config file):
//    refused, naming what to use instead.
#include <map>
#include <string>

#include "common/cli.h"
#include "common/config.h"
#include "common/parse.h"
#include "tools/hooprun/options.h"

namespace hoop::run {

namespace {

struct Switch {
  const char* flag;
  const char* var;  // with value: the variable it sets; null: taken, changing nothing
  const char* value;
  const char* refusal;  // non-null: refused with this
};

const char kNoMpi[] =
    "hooprun starts the ranks itself and needs no MPI; to start them with mpirun or Slurm, run those (a hoop job "
    "joins them: README, \"mpirun and Slurm\")";
const char kNoAutotune[] =
    "hoop does not tune its fusion settings as it runs; give --fusion-threshold-mb and --cycle-time-ms (hoop-perf "
    "fusion measures them)";
const char kNoTimestamps[] = "hoop's log lines carry no timestamps; --timestamp-output puts the time on every line";

constexpr Switch kSwitches[] = {
    {"--gloo", nullptr, nullptr, nullptr},
    {"--disable-cache", nullptr, nullptr, nullptr},
    {"--stall-check", nullptr, nullptr, nullptr},
    {"--no-hierarchical-allreduce", nullptr, nullptr, nullptr},
    {"--no-hierarchical-allgather", nullptr, nullptr, nullptr},
    {"--no-torus-allreduce", nullptr, nullptr, nullptr},
    {"--no-autotune", nullptr, nullptr, nullptr},
    {"--mpi-threads-disable", nullptr, nullptr, nullptr},
    {"--no-mpi-threads-disable", nullptr, nullptr, nullptr},
    {"--log-without-timestamp", nullptr, nullptr, nullptr},
    {"--log-hide-timestamp", nullptr, nullptr, nullptr},
    {"--no-stall-check", "HOOP_STALL_WARNING_S", "0", nullptr},
    {"--no-timeline-mark-cycles", "HOOP_TIMELINE_MARK_CYCLES", "0", nullptr},
    {"--hierarchical-allreduce", "HOOP_ALGO", "hierarchical", nullptr},
    {"--hierarchical-allgather", "HOOP_ALGO", "hierarchical", nullptr},
    {"--tcp", "HOOP_TRANSPORT", "tcp", nullptr},
    {"--mpi", nullptr, nullptr, kNoMpi},
    {"--jsrun", nullptr, nullptr, kNoMpi},
    {"--torus-allreduce", nullptr, nullptr,
     "hoop has no torus allreduce; --hierarchical-allreduce (HOOP_ALGO=hierarchical) is its two-level one"},
    {"--autotune", nullptr, nullptr, kNoAutotune},
    {"--log-with-timestamp", nullptr, nullptr, kNoTimestamps},
    {"--no-log-hide-timestamp", nullptr, nullptr, kNoTimestamps},
};

struct Refused {
  const char* flags;
  const char* why;
};

constexpr Refused kRefusedValues[] = {
    {"--mpi-args", "hoop has no MPI to pass arguments to; its settings are HOOP_* variables (-x VAR=VALUE)"},
    {"--config-file", "hooprun reads no YAML config; give its settings as flags or as HOOP_* variables (-x VAR=VALUE)"},
    {"--autotune-log-file,--autotune-warmup-samples,--autotune-steps-per-sample,--autotune-bayes-opt-max-samples,"
     "--autotune-gaussian-process-noise",
     kNoAutotune},
    {"--blacklist-cooldown-range",
     "hooprun keeps no blacklist: a host the discovery script stops listing loses its ranks, and comes back when "
     "listed again"},
    {"--binding-args", "give the binding as --bind-to none|core|hwthread|numa|socket"},
    {"--num-nccl-streams", "hoop does not use NCCL"},
    {"--thread-affinity", "hoop's background threads are placed with the rank's own binding (--bind-to)"},
};

// A number of seconds: positive sets `var`, 0 leaves the default (horovodrun's 0: off).
cli::Flags::TakeStatus Seconds(Options& o, const char* var) {
  return [&o, var](const std::string& flag, const std::string& v) -> Status {
    auto s = ParseNonNegative(v);
    if (!s) return InvalidArgument(flag + " '" + v + "': expected seconds");
    if (*s == 0) return Status::Ok();
    Status ok = Config::FromEnv({{var, v}}).status();
    if (!ok.ok()) return InvalidArgument(flag + " '" + v + "': " + ok.message());
    o.env.emplace_back(var, v);
    return Status::Ok();
  };
}

}  // namespace

void DeclareHorovodrunFlags(cli::Flags& f, Options& o) {
  f.Early("-cb,--check-build", &o.check_build);
  for (const Switch& s : kSwitches) f.Switch(s.flag, &o.horovod_switches[s.flag]);
  for (const Refused& r : kRefusedValues)
    f.Value(r.flags, [why = r.why](const std::string& flag, const std::string&) -> Status {
      return InvalidArgument(flag + ": " + why);
    });
  f.Value("--stall-check-shutdown-time-seconds", Seconds(o, "HOOP_TIMEOUT"));
  f.Value("--gloo-timeout-seconds", Seconds(o, "HOOP_TIMEOUT"));
  f.Value("--slots-per-host", cli::Int(&o.slots_per_host, 1, 4096, "a slot count"));
  f.Value("--network-interfaces", [&o](const std::string& v) -> std::string {
    const std::string first = v.substr(0, v.find(','));
    if (first.empty()) return "expected NAME[,NAME...]";
    o.network_interface = first;  // hooprun advertises one interface's address
    return "";
  });
}

Status ApplyHorovodrunSwitches(Options& o) {
  for (const Switch& s : kSwitches) {
    if (!o.horovod_switches[s.flag]) continue;
    if (s.refusal) return InvalidArgument(std::string(s.flag) + ": " + s.refusal);
    if (s.var) o.env.emplace_back(s.var, s.value);
  }
  return Status::Ok();
}

}  // namespace hoop::run
