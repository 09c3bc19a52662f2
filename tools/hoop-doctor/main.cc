// hoop-doctor: reads flight recorder dumps (hoop's, and PyTorch's in JSON) and says in a few
// lines why the job hung or failed (diagnose.h), one paragraph per communicator; its exit code
// is the finding.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/version.h"
#include "tools/hoop-doctor/diagnose.h"

namespace {

const char kUsage[] =
    "usage: hoop-doctor [--json] [--comm NAME] DIR|FILE...\n"
    "\n"
    "Reads the flight recorder dumps in the given folders (their *.json files) and files: hoop's\n"
    "hoop-trace.<communicator>.<rank>.json (written at a failure with HOOP_TRACE_DIR set, on\n"
    "SIGUSR1 to a rank or to hooprun, or by hoop_comm_dump_trace), and PyTorch's flight recorder\n"
    "dumps in their JSON form (the rank from the file name's last digits). For each communicator\n"
    "it says what went wrong and which ranks did it, in the first of these found:\n"
    "  the ranks called different collectives at one sequence number (order, a skipped call,\n"
    "  another count, dtype or root); a rank died; a rank wrote no dump while others wait for it\n"
    "  (stopped); a rank never entered a collective the others are in (stuck in its own code); every\n"
    "  rank entered one and some wait inside it (the step and the peer); another recorded failure.\n"
    "  --comm NAME   only that communicator ('world', 'world.0.1', a PyTorch process group)\n"
    "  --json        the findings as a JSON array instead of text\n"
    "  -h, --help    this text\n"
    "  --version     hoop's version\n"
    "\n"
    "Exit code: the worst communicator's finding: 0 nothing wrong found, 3 mismatched calls,\n"
    "4 a rank died, 5 a rank never entered a collective, 6 ranks stuck inside one, 7 a rank wrote\n"
    "no dump while others wait for it, 8 another failure; 1 no dump found, 2 bad usage.\n";

struct Options {
  bool help = false, version = false, json = false;
  std::string comm;
  std::vector<std::string> paths;
};

int Worst(const std::vector<hoop::doctor::Diagnosis>& ds) {
  // The most telling finding, in diagnose.h's order.
  static const int kOrder[] = {3, 4, 7, 5, 6, 8};
  for (int v : kOrder)
    for (const auto& d : ds)
      if (d.verdict == v) return v;
  return 0;
}

void PrintText(const std::vector<hoop::doctor::Diagnosis>& ds) {
  for (const auto& d : ds) {
    std::printf("communicator '%s' (%d rank%s, %d dump%s): %s\n", d.comm.c_str(), d.size, d.size == 1 ? "" : "s",
                d.dumps, d.dumps == 1 ? "" : "s", hoop::doctor::VerdictName(d.verdict));
    for (const std::string& l : d.lines) std::printf("  %s\n", l.c_str());
  }
}

void PrintJson(const std::vector<hoop::doctor::Diagnosis>& ds) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : ds)
    out.push_back({{"comm", d.comm},
                   {"size", d.size},
                   {"dumps", d.dumps},
                   {"verdict", hoop::doctor::VerdictName(d.verdict)},
                   {"exit_code", static_cast<int>(d.verdict)},
                   {"culprits", d.culprits},
                   {"seq", d.seq},
                   {"lines", d.lines}});
  std::printf("%s\n", out.dump(2).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  hoop::cli::Flags f;
  f.Early("-h,--help", &o.help);
  f.Early("--version", &o.version);
  f.Switch("--json", &o.json);
  f.Value("--comm", hoop::cli::NonEmpty(&o.comm, "a communicator's name"));
  f.StopAtPositional();
  if (hoop::Status s = f.Parse(argc, argv); !s.ok()) {
    std::fprintf(stderr, "hoop-doctor: %s\n(run 'hoop-doctor --help' for usage)\n", s.message().c_str());
    return 2;
  }
  if (o.help) return std::fputs(kUsage, stdout), 0;
  if (o.version) return std::printf("%s\n", hoop::VersionLine("hoop-doctor").c_str()), 0;
  o.paths = f.rest();
  if (o.paths.empty()) {
    std::fprintf(stderr, "hoop-doctor: name a folder of dumps, or dump files\n(run 'hoop-doctor --help' for usage)\n");
    return 2;
  }
  std::vector<std::string> skipped;
  auto dumps = hoop::doctor::ReadDumps(o.paths, &skipped);
  if (!dumps.ok()) {
    std::fprintf(stderr, "hoop-doctor: %s\n", dumps.status().message().c_str());
    return 2;
  }
  if (!o.comm.empty()) std::erase_if(*dumps, [&](const hoop::doctor::RankDump& d) { return d.comm != o.comm; });
  if (dumps->empty()) {
    std::fprintf(stderr, "hoop-doctor: no flight recorder dump%s in %s%s\n",
                 o.comm.empty() ? "" : " of that communicator", o.paths[0].c_str(),
                 o.paths.size() > 1 ? " and the others" : "");
    return 1;
  }
  for (const std::string& s : skipped)
    std::fprintf(stderr, "hoop-doctor: %s: not a flight recorder dump, skipped\n", s.c_str());
  const auto ds = hoop::doctor::Diagnose(*dumps);
  if (o.json)
    PrintJson(ds);
  else
    PrintText(ds);
  return Worst(ds);
}
