// hooprun's command line.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/cli.h"
#include "common/status.h"
#include "common/topology.h"
#include "tools/hooprun/hosts.h"
#include "tools/hooprun/remote.h"

namespace hoop::run {

struct Options {
  int np = 0;            // 0 with hosts given: the sum of their slots
  std::string hosts;     // -H HOST[:SLOTS],...
  std::string hostfile;  // --hostfile FILE
  MapBy map_by = MapBy::kSlot;
  BindTo bind_to = BindTo::kDefault;  // --bind-to
  bool report_bindings = false;
  std::string output_dir;                                // --output-filename DIR
  std::string wdir;                                      // --wdir DIR: the ranks' working folder
  bool verbose = false;                                  // --verbose: the plan and each start
  std::vector<std::pair<std::string, std::string>> env;  // -x VAR[=VAL]
  double timeout_s = 0;                                  // 0: none
  bool tag_output = false;
  bool timestamp_output = false;   // --timestamp-output: each line starts with its time
  bool oversubscribe = false;      // no warning for more ranks than cores
  bool allow_run_as_root = false;  // mpirun's flag, accepted and ignored
  int npernode = 0;                // -N/--npernode: ranks per host (0: the hosts' slots)
  bool enable_recovery = false;    // a failed rank does not stop the others (OpenMPI's flag)
  // Elastic (horovodrun's flags; elastic.h): set by --min-np, --max-np or --host-discovery-script.
  bool elastic_mode = false;       // any of the flags below given
  int min_np = 0;                  // 0: -np
  int max_np = 0;                  // 0: -np (or, with discovery, no bound but the slots)
  std::string discovery_script;    // --host-discovery-script: prints HOST[:SLOTS] lines
  double elastic_timeout_s = 600;  // --elastic-timeout: how long below --min-np before giving up
  int reset_limit = 0;             // --reset-limit: changes of the ranks before giving up (0: none)
  bool elastic() const { return elastic_mode; }
  SshOptions ssh;                                // -p, -i, --ssh-args, --start-timeout
  std::string store_address;                     // --store-address ADDR
  std::string network_interface;                 // --network-interface NAME
  bool agent = false;                            // --agent: run a remote host's share (remote.h)
  bool status = false;                           // --status [PID]: the live view of a running job (status.h)
  bool timeline_mark_cycles = false;             // --timeline-mark-cycles: HOOP_TIMELINE_MARK_CYCLES=1 for every rank
  double status_timeout_s = 3;                   // --status-timeout: how long the ranks have to answer
  int slots_per_host = 1;                        // --slots-per-host: a discovered host's slots where it names none
  bool check_build = false;                      // -cb, --check-build: what this hoop was built with (horovodrun's)
  std::map<std::string, bool> horovod_switches;  // horovodrun's switches given (horovodrun_flags.cc)
  bool help = false, version = false;
  std::vector<std::string> command;
};

extern const char* const kUsage;
// horovodrun's flags without a hooprun flag of their own (horovodrun_flags.cc): declared on f;
// then, once parsed, the switches' variables set (or the refusal).
void DeclareHorovodrunFlags(cli::Flags& f, Options& o);
Status ApplyHorovodrunSwitches(Options& o);
int PrintCheckBuild();  // --check-build (check_build.cc)
StatusOr<Options> ParseOptions(int argc, char** argv);
// Every flag ParseOptions reads, each alias (the usage test checks kUsage names them all).
std::vector<std::string> FlagNames();

}  // namespace hoop::run
