#include "tools/hooprun/options.h"

#include <cstdlib>

#include "common/parse.h"

namespace hoop::run {

const char* const kUsage =
    "usage: hooprun -np N [-x VAR[=VAL]]... [--timeout SECONDS] [--tag-output] PROGRAM [ARGS...]\n"
    "\n"
    "Starts N ranks of PROGRAM on this host, serves the job's rendezvous store, and gives each\n"
    "rank HOOP_RANK, HOOP_SIZE, HOOP_LOCAL_RANK, HOOP_LOCAL_SIZE, HOOP_STORE and HOOP_JOB_TOKEN.\n"
    "\n"
    "  -np N, -n N          number of ranks (required)\n"
    "  -x VAR[=VAL]         set VAR for every rank (VAR alone: pass this shell's value)\n"
    "  --timeout SECONDS    stop the whole job if it runs longer (exit code 124)\n"
    "  --tag-output         prefix lines with [RANK]<stdout>: / [RANK]<stderr>: instead of [RANK]\n"
    "  -h, --help           this text\n"
    "\n"
    "Every output line is prefixed with its rank. If a rank dies or exits non-zero, the other\n"
    "ranks get a few seconds to report, are then stopped, and hooprun exits non-zero with one\n"
    "line naming the rank and how it failed. Ctrl-C stops every rank (exit code 130).\n";

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
  if (o.np == 0) return InvalidArgument("-np N is required");
  if (o.command.empty()) return InvalidArgument("no PROGRAM given");
  return o;
}

}  // namespace hoop::run
