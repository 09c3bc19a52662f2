#include "tools/hooprun/options.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "common/cli.h"
#include "common/config.h"
#include "common/parse.h"

namespace hoop::run {

const char* const kUsage =
    "usage: hooprun -np N [-H HOST:SLOTS,... | --hostfile FILE] [--map-by slot|node] [ssh options]\n"
    "               [-x VAR[=VAL]]... [--timeout SECONDS] [--tag-output] [--oversubscribe]\n"
    "               [--enable-recovery] [--min-np N] [--max-np N] [--host-discovery-script FILE]\n"
    "               [tensor fusion options] PROGRAM [ARGS...]\n"
    "       hooprun --status [--status-timeout SECONDS] [PID]\n"
    "\n"
    "Starts N ranks of PROGRAM, serves the job's rendezvous store, and gives each rank HOOP_RANK,\n"
    "HOOP_SIZE, HOOP_LOCAL_RANK, HOOP_LOCAL_SIZE, HOOP_CROSS_RANK, HOOP_CROSS_SIZE, HOOP_STORE and\n"
    "HOOP_JOB_TOKEN; and torchrun's RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, with\n"
    "MASTER_ADDR, MASTER_PORT (rank 0's host, a free port) and PYTHONUNBUFFERED=1 unless set\n"
    "already, so `hooprun -np 2 python3 train.py` runs a torchrun script unchanged.\n"
    "\n"
    "  -np N, -n N, --np N, --num-proc N\n"
    "                       number of ranks (required without hosts; with them, at most the sum\n"
    "                       of their slots, which is the default)\n"
    "  -H, --host, --hosts HOST[:SLOTS],...\n"
    "                       the hosts and their slots (default 1 each), as horovodrun's -H\n"
    "  --hostfile, -hostfile FILE\n"
    "                       the same from a file: one 'HOST [slots=N] [max_slots=M]' per line,\n"
    "                       '#' comments (max_slots bounds --oversubscribe)\n"
    "  --map-by slot|node   fill each host's slots in turn (slot, the default) or deal ranks\n"
    "                       round-robin over the hosts (node)\n"
    "                       Ranks on other hosts start over ssh, one agent per host (this same\n"
    "                       hooprun, at the same path there, as mpirun's orted)\n"
    "  -p, --ssh-port PORT  ssh's port on the other hosts\n"
    "  -i, --ssh-identity-file FILE   ssh's key\n"
    "  --ssh-args 'ARGS'    more arguments for ssh (split on spaces)\n"
    "  --start-timeout SECONDS  how long every host has to answer ssh (default 30); hosts that\n"
    "                       do not are named, with ssh's error, and nothing starts\n"
    "  --store-address ADDR the job's store listens on this address of this host (default, with\n"
    "                       other hosts: the address on the route to the first of them)\n"
    "  --network-interface NAME   the same, the address of this interface\n"
    "  --network-interfaces NAME,...  horovodrun's: the first of them\n"
    "  --bind-to none|core|hwthread|numa|socket\n"
    "                       bind each rank to a core (rank i to core i), a hardware thread (the\n"
    "                       cores' first threads, then their second ones), or to the NUMA node or\n"
    "                       package holding it (default: the NUMA node, or the package where\n"
    "                       there is none; none when the ranks outnumber the cores; hwloc. Not\n"
    "                       OpenMPI's core default: a rank's worker thread needs room, PERF.md)\n"
    "  --report-bindings    print each rank's binding before it starts\n"
    "  -x VAR[=VAL]         set VAR for every rank (VAR alone: pass this shell's value)\n"
    "  --timeout SECONDS    stop the whole job if it runs longer (exit code 124)\n"
    "  --tag-output         prefix lines with [RANK]<stdout>: / [RANK]<stderr>: instead of [RANK]\n"
    "  --timestamp-output, --prefix-output-with-timestamp\n"
    "                       start every line with the time hooprun relayed it (mpirun's)\n"
    "  --output-filename DIR  also write each rank's output, unprefixed, to DIR/rank.N/stdout\n"
    "                       and DIR/rank.N/stderr (N zero-padded; made or truncated at start)\n"
    "  --wdir DIR           the ranks' working folder (default: hooprun's); a relative PROGRAM\n"
    "                       path is found from there\n"
    "  -v, --verbose        print the plan (hosts, slots, each rank's place, binding and command,\n"
    "                       an argument over 200 characters by its start and length; the store's\n"
    "                       address; never the job token) and each start\n"
    "  --oversubscribe      more ranks than cores without the warning, and more than the hosts'\n"
    "                       slots: the rest dealt one per host in turn, up to a hostfile's\n"
    "                       max_slots (as mpirun's flag)\n"
    "  -N, --npernode N     N ranks on every host, whatever its slots (mpirun's); -np defaults to\n"
    "                       N x hosts\n"
    "  --allow-run-as-root  accepted, as mpirun takes it; hooprun needs no such permission\n"
    "  --mca KEY VALUE      refused, naming what to use instead: hoop's settings are HOOP_*\n"
    "                       variables (-x VAR=VALUE)\n"
    "  --enable-recovery    a rank that fails does not stop the others (as mpirun's flag): its\n"
    "                       end is reported and the job goes on; hooprun exits, when the last\n"
    "                       rank has, with the first failed rank's code (for programs that\n"
    "                       survive a peer's loss: hoop-train --strategy ps's workers, or\n"
    "                       hoop_comm_shrink, which learns from hooprun who is gone)\n"
    "Elastic (horovodrun's flags; README, \"Elastic jobs\"): the job goes on while at least --min-np\n"
    "ranks live, and hooprun starts newcomers into the running job, with HOOP_JOIN=1 and their number\n"
    "in the job as HOOP_RANK (hoop_init_from_env and hoop.init() then join it, admitted by the\n"
    "ranks' next hoop_comm_grow; hoop_comm_newcomers counts them): a replacement for every rank\n"
    "that fails, where a host has a free slot, and ranks on hosts the discovery script adds, up to\n"
    "--max-np. A rank that fails is reported and the others go on (as --enable-recovery); the job\n"
    "exits 0 when its ranks end well. Each event is one line on stderr.\n"
    "  --min-np N, --min-num-proc N\n"
    "                       the fewest ranks the job runs with (default with the flags below: -np)\n"
    "  --max-np N, --max-num-proc N\n"
    "                       the most ranks at once (default: -np; with a discovery script, the\n"
    "                       slots it lists)\n"
    "  --host-discovery-script FILE\n"
    "                       run every second; prints the hosts the job may use, one HOST[:SLOTS]\n"
    "                       per line (default 1 slot). Replaces -H; a host no longer listed has its\n"
    "                       ranks stopped, a host added gets ranks while the job is under --max-np\n"
    "  --slots-per-host N   the slots of a listed host that names none (default 1)\n"
    "  --elastic-timeout SECONDS  how long the job may stay under --min-np ranks, waiting for\n"
    "                       hosts, before it is stopped (default 600)\n"
    "  --reset-limit N      stop the job after N changes of its ranks (a loss, ranks added; default:\n"
    "                       no limit)\n"
    "  --status [PID]       the live view of a running job (this user's; PID: which hooprun, where\n"
    "                       several run): asks every rank, through the job's store, where it is\n"
    "                       and prints a table: each rank's operation, its sequence number, state,\n"
    "                       how long it has waited and where (step, chunk); who is behind, who does\n"
    "                       not answer (stopped), who is gone. Where a rank has waited over a\n"
    "                       second, hoop-doctor's finding follows, and is the exit code (as\n"
    "                       hoop-doctor's; 0: the job is moving; 1: no such job)\n"
    "  --status-timeout SECONDS  how long the ranks have to answer --status (default 3)\n"
    "  -h, --help           this text\n"
    "  --version            hooprun's version\n"
    "  --agent              (hooprun's own use) run another host's share of a job, started by\n"
    "                       hooprun over ssh; reads the plan on stdin\n"
    "A flag's value follows it (--timeout 60) or joins it with '=' (--timeout=60). The flags end\n"
    "at PROGRAM, or at '--'; what follows is PROGRAM's own.\n"
    "\n"
    "Tensor fusion and logging, as horovodrun's flags; each sets a variable for every rank:\n"
    "  --fusion-threshold-mb MB               HOOP_FUSION_THRESHOLD (MB x 1 MiB; default 64)\n"
    "  --cycle-time-ms MS                     HOOP_CYCLE_TIME_MS (default 1)\n"
    "  --cache-capacity N                     HOOP_CACHE_CAPACITY (default 1024)\n"
    "  --timeline-filename FILE               HOOP_TIMELINE (a Chrome trace of rank 0)\n"
    "  --timeline-mark-cycles                 HOOP_TIMELINE_MARK_CYCLES=1 (each negotiation cycle's\n"
    "                                         start marked in it)\n"
    "  --stall-check-warning-time-seconds S   HOOP_STALL_WARNING_S (default 60; 0: never warn)\n"
    "  --log-level LEVEL                      HOOP_LOG_LEVEL: none, error, warn, info or debug (any\n"
    "                                         case; warning and trace too)\n"
    "  --no-stall-check                       HOOP_STALL_WARNING_S=0\n"
    "  --stall-check-shutdown-time-seconds S, --gloo-timeout-seconds S\n"
    "                                         HOOP_TIMEOUT=S (0: unchanged): a tensor some ranks\n"
    "                                         never submit fails after S seconds\n"
    "  --hierarchical-allreduce, --hierarchical-allgather   HOOP_ALGO=hierarchical\n"
    "  --tcp                                  HOOP_TRANSPORT=tcp\n"
    "  --no-timeline-mark-cycles              HOOP_TIMELINE_MARK_CYCLES=0\n"
    "horovodrun's others: -cb, --check-build prints what this hoop was built with; --gloo,\n"
    "--disable-cache, --stall-check, --no-hierarchical-allreduce, --no-hierarchical-allgather,\n"
    "--no-torus-allreduce, --no-autotune, --mpi-threads-disable, --no-mpi-threads-disable,\n"
    "--log-without-timestamp and --log-hide-timestamp ask for what hoop does anyway and change\n"
    "nothing; --mpi, --jsrun, --mpi-args, --config-file, --torus-allreduce, --autotune and its\n"
    "--autotune-log-file, --autotune-warmup-samples, --autotune-steps-per-sample,\n"
    "--autotune-bayes-opt-max-samples, --autotune-gaussian-process-noise, --blacklist-cooldown-range,\n"
    "--binding-args, --num-nccl-streams, --thread-affinity, --log-with-timestamp and\n"
    "--no-log-hide-timestamp are refused, saying what to use instead.\n"
    "\n"
    "Every output line is prefixed with its rank. If a rank dies or exits non-zero, the other\n"
    "ranks get a few seconds to report, are then stopped, and hooprun exits non-zero with one\n"
    "line naming the rank and how it failed. Ctrl-C stops every rank (exit code 130), SIGTERM\n"
    "too (exit code 143). A PROGRAM that is not found exits 127, one that cannot be executed 126,\n"
    "before any rank starts (as mpirun).\n"
    "\n"
    "More ranks than cores runs, with a warning. Every pair of ranks on a host shares a ring of\n"
    "about 513 KiB (shm), so N ranks need up to N x (N-1) x 513 KiB: hooprun refuses a job whose\n"
    "rings alone would not fit in this host's memory, or with more than 64 ranks per core (ranks\n"
    "that wait long for a core are taken for lost peers).\n";

namespace {

// horovodrun's flags for the tensor fusion runtime and logging: each becomes a HOOP_* variable
// for every rank (the ranks' Config checks the value's range, naming the variable).
struct Knob {
  const char* flag;
  const char* var;
  StatusOr<std::string> (*convert)(const std::string&);
};

StatusOr<std::string> AsIs(const std::string& v) { return v; }

StatusOr<std::string> MegabytesToBytes(const std::string& v) {
  auto mb = ParseNonNegative(v);
  if (!mb || *mb > 4096) return InvalidArgument("expected megabytes in [0, 4096]");
  return std::to_string(static_cast<unsigned long long>(*mb * 1048576.0));
}

constexpr Knob kKnobs[] = {
    {"--fusion-threshold-mb", "HOOP_FUSION_THRESHOLD", MegabytesToBytes},
    {"--cycle-time-ms", "HOOP_CYCLE_TIME_MS", AsIs},
    {"--cache-capacity", "HOOP_CACHE_CAPACITY", AsIs},
    {"--timeline-filename", "HOOP_TIMELINE", AsIs},
    {"--stall-check-warning-time-seconds", "HOOP_STALL_WARNING_S", AsIs},
    {"--log-level", "HOOP_LOG_LEVEL", AsIs},
};

// Every flag, stored into `o` as it is read.
void Declare(cli::Flags& f, Options& o) {
  f.Early("-h,--help", &o.help);
  f.Early("--version", &o.version);
  f.Early("--agent", &o.agent);
  f.StopAtPositional();
  f.Value("-np,-n,--np,--num-proc", cli::Int(&o.np, 1, 4096, "a rank count"));
  f.Value("-N,--npernode", cli::Int(&o.npernode, 1, 4096, "ranks per host"));
  f.Value("-H,--host,--hosts", cli::Text(&o.hosts));
  f.Value("--hostfile,-hostfile", cli::Text(&o.hostfile));
  f.Value("--map-by", [&](const std::string& v) -> std::string {
    if (v != "slot" && v != "node") return "expected slot or node";
    o.map_by = v == "slot" ? MapBy::kSlot : MapBy::kNode;
    return "";
  });
  f.Value("--bind-to", [&](const std::string& v) -> std::string {
    if (v == "none")
      o.bind_to = BindTo::kNone;
    else if (v == "core")
      o.bind_to = BindTo::kCore;
    else if (v == "numa")
      o.bind_to = BindTo::kNuma;
    else if (v == "socket" || v == "package")
      o.bind_to = BindTo::kSocket;
    else if (v == "hwthread")
      o.bind_to = BindTo::kHwthread;
    else
      return "expected none, core, hwthread, numa or socket";
    return "";
  });
  f.Value("--output-filename", cli::NonEmpty(&o.output_dir, "a folder name"));
  f.Value("--wdir", cli::NonEmpty(&o.wdir, "a folder name"));
  f.Switch("--verbose,-v", &o.verbose);
  f.Switch("--report-bindings", &o.report_bindings);
  f.Value("-x", [&](const std::string& v) -> std::string {
    auto eq = v.find('=');
    if (eq == 0 || v.empty()) return "expected VAR or VAR=VAL";
    if (eq == std::string::npos) {
      const char* cur = std::getenv(v.c_str());
      if (!cur) return v + " is not set in this environment";
      o.env.emplace_back(v, cur);
    } else {
      o.env.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    }
    return "";
  });
  f.Value("--timeout", cli::Seconds(&o.timeout_s));
  f.Switch("--tag-output", &o.tag_output);
  f.Switch("--timestamp-output,--prefix-output-with-timestamp", &o.timestamp_output);
  f.Switch("--oversubscribe", &o.oversubscribe);
  // mpirun's habits: --allow-run-as-root is accepted and does nothing (hooprun runs as root as
  // it runs as anyone); --mca is refused with what hoop reads instead.
  f.Switch("--allow-run-as-root", &o.allow_run_as_root);
  f.Value("--mca", [](const std::string& v) -> std::string {
    return "'" + v +
           "': hoop has no MCA parameters; its settings are HOOP_* variables, given to every rank with "
           "-x VAR=VALUE (README, Configuration)";
  });
  f.Switch("--enable-recovery", &o.enable_recovery);
  f.Value("--min-np,--min-num-proc", cli::Int(&o.min_np, 1, 4096, "a rank count"));
  f.Value("--max-np,--max-num-proc", cli::Int(&o.max_np, 1, 4096, "a rank count"));
  f.Value("--host-discovery-script", cli::NonEmpty(&o.discovery_script, "a program"));
  f.Value("--elastic-timeout", cli::Seconds(&o.elastic_timeout_s));
  f.Value("--reset-limit", cli::Int(&o.reset_limit, 0, 1 << 20, "a count"));
  f.Value("-p,--ssh-port", cli::Int(&o.ssh.port, 1, 65535, "a port"));
  f.Value("-i,--ssh-identity-file", cli::Text(&o.ssh.identity));
  f.Value("--ssh-args", [&](const std::string& v) -> std::string {
    std::istringstream words(v);
    for (std::string w; words >> w;) o.ssh.args.push_back(w);
    return "";
  });
  f.Value("--start-timeout", cli::Seconds(&o.ssh.start_timeout_s));
  f.Value("--store-address", cli::Text(&o.store_address));
  f.Value("--network-interface", cli::Text(&o.network_interface));
  f.Switch("--status", &o.status);
  f.Value("--status-timeout", cli::Seconds(&o.status_timeout_s));
  f.Switch("--timeline-mark-cycles", &o.timeline_mark_cycles);
  DeclareHorovodrunFlags(f, o);
  for (const Knob& k : kKnobs)
    f.Value(k.flag, [&o, &k](const std::string& flag, const std::string& v) -> Status {
      auto value = k.convert(v);
      // Checked here, by the ranks' own rules, so a bad value stops the job before it starts.
      Status ok = value.ok() ? Config::FromEnv({{k.var, *value}}).status() : value.status();
      if (!ok.ok()) return InvalidArgument(flag + " '" + v + "': " + ok.message());
      o.env.emplace_back(k.var, *value);
      return Status::Ok();
    });
}

// The elastic flags' sense, before anything starts (horovodrun's rules): --min-np <= -np <= --max-np.
Status CheckElastic(Options& o) {
  const bool elastic = o.min_np > 0 || o.max_np > 0 || !o.discovery_script.empty();
  if (!elastic) return Status::Ok();
  if (!o.discovery_script.empty() && (!o.hosts.empty() || !o.hostfile.empty()))
    return InvalidArgument("--host-discovery-script and " + std::string(o.hosts.empty() ? "--hostfile" : "-H") +
                           ": give one of them (the script lists the hosts)");
  if (o.npernode > 0) return InvalidArgument("-N/--npernode and the elastic flags: give -np and the hosts' slots");
  o.elastic_mode = true;
  if (o.np > 0 && o.min_np > o.np)
    return InvalidArgument("--min-np " + std::to_string(o.min_np) + " is more than -np " + std::to_string(o.np));
  if (o.max_np > 0 && o.max_np < std::max(o.np, o.min_np))
    return InvalidArgument("--max-np " + std::to_string(o.max_np) + " is less than " +
                           (o.np >= o.min_np ? "-np " + std::to_string(o.np) : "--min-np " + std::to_string(o.min_np)));
  o.enable_recovery = true;  // a rank that fails does not stop the others
  return Status::Ok();
}

}  // namespace

std::vector<std::string> FlagNames() {
  Options o;
  cli::Flags f;
  Declare(f, o);
  return f.Names();
}

StatusOr<Options> ParseOptions(int argc, char** argv) {
  Options o;
  cli::Flags f;
  Declare(f, o);
  HOOP_RETURN_IF_ERROR(f.Parse(argc, argv));
  if (o.help || o.version || o.agent || o.check_build) return o;
  o.command = f.rest();
  if (o.timeline_mark_cycles) o.env.emplace_back("HOOP_TIMELINE_MARK_CYCLES", "1");
  HOOP_RETURN_IF_ERROR(ApplyHorovodrunSwitches(o));
  if (o.status) {
    if (o.command.size() > 1 ||
        (o.command.size() == 1 && o.command[0].find_first_not_of("0123456789") != std::string::npos))
      return InvalidArgument("--status takes at most one argument, a running hooprun's pid");
    return o;
  }
  if (!o.hosts.empty() && !o.hostfile.empty()) return InvalidArgument("-H and --hostfile: give one of them");
  if (!o.store_address.empty() && !o.network_interface.empty())
    return InvalidArgument("--store-address and --network-interface: give one of them");
  if (o.np == 0 && o.npernode == 0 && o.hosts.empty() && o.hostfile.empty() && o.discovery_script.empty())
    return InvalidArgument("-np N is required");
  if (o.command.empty()) return InvalidArgument("no PROGRAM given");
  HOOP_RETURN_IF_ERROR(CheckElastic(o));
  return o;
}

}  // namespace hoop::run
