// See limit_args.h.
#include "perf/limit_args.h"

#include <cstdio>
#include <string>

#include "common/cli.h"
#include "common/parse.h"
#include "common/version.h"

namespace hoop::perf {

int ParseLimitArgs(int argc, char** argv, const char* prog, const char* usage, std::initializer_list<LimitArg> args) {
  bool help = false, version = false;
  cli::Flags f;
  f.Early("-h,--help", &help);
  f.Early("--version", &version);
  f.StopAtPositional();
  if (Status s = f.Parse(argc, argv); !s.ok()) {
    std::fprintf(stderr, "%s: %s (see %s --help)\n", prog, s.message().c_str(), prog);
    return 2;
  }
  if (help) {
    std::puts(usage);
    return 0;
  }
  if (version) {
    std::printf("%s\n", VersionLine(prog).c_str());
    return 0;
  }
  const auto& given = f.rest();
  if (given.size() > args.size()) {
    std::fprintf(stderr, "%s: '%s': expected at most %zu counts (see %s --help)\n", prog, given[args.size()].c_str(),
                 args.size(), prog);
    return 2;
  }
  size_t i = 0;
  for (const LimitArg& a : args) {
    if (i == given.size()) break;
    const std::string& v = given[i++];
    auto n = ParseInt(v);
    if (!n || *n < a.lo || *n > a.hi) {
      std::fprintf(stderr, "%s: %s '%s': expected a count in [%lld, %lld]\n", prog, a.name, v.c_str(), a.lo, a.hi);
      return 2;
    }
    *a.value = *n;
  }
  return -1;
}

}  // namespace hoop::perf
