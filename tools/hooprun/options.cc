#include "tools/hooprun/options.h"

#include <cstdlib>
#include <sstream>

#include "common/config.h"
#include "common/parse.h"

namespace hoop::run {

const char* const kUsage =
    "usage: hooprun -np N [-H HOST:SLOTS,... | --hostfile FILE] [--map-by slot|node] [ssh options]\n"
    "               [-x VAR[=VAL]]... [--timeout SECONDS] [--tag-output] [--oversubscribe]\n"
    "               [--enable-recovery]\n"
    "               [tensor fusion options] PROGRAM [ARGS...]\n"
    "\n"
    "Starts N ranks of PROGRAM, serves the job's rendezvous store, and gives each rank HOOP_RANK,\n"
    "HOOP_SIZE, HOOP_LOCAL_RANK, HOOP_LOCAL_SIZE, HOOP_CROSS_RANK, HOOP_CROSS_SIZE, HOOP_STORE and\n"
    "HOOP_JOB_TOKEN; and torchrun's RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, with\n"
    "MASTER_ADDR, MASTER_PORT (rank 0's host, a free port) and PYTHONUNBUFFERED=1 unless set\n"
    "already, so `hooprun -np 2 python3 train.py` runs a torchrun script unchanged.\n"
    "\n"
    "  -np N, -n N          number of ranks (required without hosts; with them, at most the sum\n"
    "                       of their slots, which is the default)\n"
    "  -H HOST[:SLOTS],...  the hosts and their slots (default 1 each), as horovodrun's -H\n"
    "  --hostfile FILE      the same from a file: one 'HOST [slots=N]' per line, '#' comments\n"
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
    "  --bind-to none|core|numa|socket\n"
    "                       bind each rank to a core (rank i to core i), or to the NUMA node or\n"
    "                       package holding it (default: the NUMA node, or the package where\n"
    "                       there is none; none when the ranks outnumber the cores; hwloc. Not\n"
    "                       OpenMPI's core default: a rank's worker thread needs room, PERF.md)\n"
    "  --report-bindings    print each rank's binding before it starts\n"
    "  -x VAR[=VAL]         set VAR for every rank (VAR alone: pass this shell's value)\n"
    "  --timeout SECONDS    stop the whole job if it runs longer (exit code 124)\n"
    "  --tag-output         prefix lines with [RANK]<stdout>: / [RANK]<stderr>: instead of [RANK]\n"    "  --output-filename DIR  also write each rank's output, unprefixed, to DIR/rank.N/stdout\n"
    "                       and DIR/rank.N/stderr (N zero-padded; made or truncated at start)\n"    "  --wdir DIR           the ranks' working folder (default: hooprun's); a relative PROGRAM\n"
    "                       path is found from there\n"
    "  --verbose            print the plan (hosts, slots, each rank's place, binding and command,\n"
    "                       the store's address; never the job token) and each start\n"
    "  --oversubscribe      more ranks than cores without the warning (as mpirun's flag)\n"
    "  --enable-recovery    a rank that fails does not stop the others (as mpirun's flag): its\n"
    "                       end is reported and the job goes on; hooprun exits, when the last\n"
    "                       rank has, with the first failed rank's code (for programs that\n"
    "                       survive a peer's loss: hoop-train --strategy ps's workers)\n"
    "  -h, --help           this text\n"
    "  --version            hooprun's version\n"
    "\n"
    "Tensor fusion and logging, as horovodrun's flags; each sets a variable for every rank:\n"
    "  --fusion-threshold-mb MB               HOOP_FUSION_THRESHOLD (MB x 1 MiB; default 64)\n"
    "  --cycle-time-ms MS                     HOOP_CYCLE_TIME_MS (default 1)\n"
    "  --cache-capacity N                     HOOP_CACHE_CAPACITY (default 1024)\n"
    "  --timeline-filename FILE               HOOP_TIMELINE (a Chrome trace of rank 0)\n"
    "  --stall-check-warning-time-seconds S   HOOP_STALL_WARNING_S (default 60; 0: never warn)\n"
    "  --log-level LEVEL                      HOOP_LOG_LEVEL: error, warn, info or debug\n"
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

const Knob* FusionKnob(const std::string& flag) {
  for (const Knob& k : kKnobs)
    if (flag == k.flag) return &k;
  return nullptr;
}

}  // namespace

StatusOr<Options> ParseOptions(int argc, char** argv) {
  Options o;
  int i = 1;
  auto need = [&](const std::string& flag) -> StatusOr<std::string> {
    if (i + 1 >= argc) return InvalidArgument(flag + " needs a value");
    return std::string(argv[++i]);
  };
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      o.help = true;
      return o;
    } else if (a == "-np" || a == "-n" || a == "--np") {
      HOOP_ASSIGN_OR_RETURN(std::string v, need(a));
      auto n = ParseInt(v);
      if (!n || *n < 1 || *n > 4096) return InvalidArgument(a + " '" + v + "': expected a rank count in [1, 4096]");
      o.np = static_cast<int>(*n);
    } else if (a == "-H" || a == "--host" || a == "--hosts") {
      HOOP_ASSIGN_OR_RETURN(o.hosts, need(a));
    } else if (a == "--hostfile" || a == "-hostfile") {
      HOOP_ASSIGN_OR_RETURN(o.hostfile, need(a));
    } else if (a == "--map-by") {
      HOOP_ASSIGN_OR_RETURN(std::string v, need(a));
      if (v != "slot" && v != "node") return InvalidArgument("--map-by '" + v + "': expected slot or node");
      o.map_by = v == "slot" ? MapBy::kSlot : MapBy::kNode;
    } else if (a == "--bind-to") {
      HOOP_ASSIGN_OR_RETURN(std::string v, need(a));
      if (v == "none") o.bind_to = BindTo::kNone;
      else if (v == "core") o.bind_to = BindTo::kCore;
      else if (v == "numa") o.bind_to = BindTo::kNuma;
      else if (v == "socket" || v == "package") o.bind_to = BindTo::kSocket;
      else return InvalidArgument("--bind-to '" + v + "': expected none, core, numa or socket");
    } else if (a == "--output-filename") {
      HOOP_ASSIGN_OR_RETURN(o.output_dir, need(a));
      if (o.output_dir.empty()) return InvalidArgument("--output-filename: an empty folder name");
    } else if (a == "--wdir") {
      HOOP_ASSIGN_OR_RETURN(o.wdir, need(a));
      if (o.wdir.empty()) return InvalidArgument("--wdir: an empty folder name");
    } else if (a == "--verbose" || a == "-v") {
      o.verbose = true;
    } else if (a == "--report-bindings") {
      o.report_bindings = true;
    } else if (a == "-x") {
      HOOP_ASSIGN_OR_RETURN(std::string v, need(a));
      auto eq = v.find('=');
      if (eq == 0 || v.empty()) return InvalidArgument("-x '" + v + "': expected VAR or VAR=VAL");
      if (eq == std::string::npos) {
        const char* cur = std::getenv(v.c_str());
        if (!cur) return InvalidArgument("-x " + v + ": " + v + " is not set in this environment");
        o.env.emplace_back(v, cur);
      } else {
        o.env.emplace_back(v.substr(0, eq), v.substr(eq + 1));
      }
    } else if (a == "--timeout") {
      HOOP_ASSIGN_OR_RETURN(std::string v, need(a));
      auto s = ParseSeconds(v);
      if (!s) return InvalidArgument("--timeout '" + v + "': expected a positive number of seconds");
      o.timeout_s = *s;
    } else if (a == "--tag-output") {
      o.tag_output = true;
    } else if (a == "--oversubscribe") {
      o.oversubscribe = true;
    } else if (a == "--enable-recovery") {
      o.enable_recovery = true;
    } else if (a == "-p" || a == "--ssh-port") {
      HOOP_ASSIGN_OR_RETURN(std::string v, need(a));
      auto n = ParseInt(v);
      if (!n || *n < 1 || *n > 65535) return InvalidArgument(a + " '" + v + "': expected a port in [1, 65535]");
      o.ssh.port = static_cast<int>(*n);
    } else if (a == "-i" || a == "--ssh-identity-file") {
      HOOP_ASSIGN_OR_RETURN(o.ssh.identity, need(a));
    } else if (a == "--ssh-args") {
      HOOP_ASSIGN_OR_RETURN(std::string v, need(a));
      std::istringstream words(v);
      for (std::string w; words >> w;) o.ssh.args.push_back(w);
    } else if (a == "--start-timeout") {
      HOOP_ASSIGN_OR_RETURN(std::string v, need(a));
      auto t = ParseSeconds(v);
      if (!t) return InvalidArgument("--start-timeout '" + v + "': expected a positive number of seconds");
      o.ssh.start_timeout_s = *t;
    } else if (a == "--store-address") {
      HOOP_ASSIGN_OR_RETURN(o.store_address, need(a));
    } else if (a == "--network-interface") {
      HOOP_ASSIGN_OR_RETURN(o.network_interface, need(a));
    } else if (a == "--agent") {
      o.agent = true;
      return o;
    } else if (a == "--version") {
      o.version = true;
      return o;
    } else if (auto knob = FusionKnob(a)) {
      HOOP_ASSIGN_OR_RETURN(std::string v, need(a));
      auto value = knob->convert(v);
      // Checked here, by the ranks' own rules, so a bad value stops the job before it starts.
      Status ok = value.ok() ? Config::FromEnv({{knob->var, *value}}).status() : value.status();
      if (!ok.ok()) return InvalidArgument(a + " '" + v + "': " + ok.message());
      o.env.emplace_back(knob->var, *value);
    } else if (a == "--") {
      ++i;
      break;
    } else if (!a.empty() && a[0] == '-') {
      return InvalidArgument("unknown option '" + a + "'");
    } else {
      break;
    }
  }
  for (; i < argc; ++i) o.command.push_back(argv[i]);
  if (!o.hosts.empty() && !o.hostfile.empty()) return InvalidArgument("-H and --hostfile: give one of them");
  if (!o.store_address.empty() && !o.network_interface.empty())
    return InvalidArgument("--store-address and --network-interface: give one of them");
  if (o.np == 0 && o.hosts.empty() && o.hostfile.empty()) return InvalidArgument("-np N is required");
  if (o.command.empty()) return InvalidArgument("no PROGRAM given");
  return o;
}

}  // namespace hoop::run
