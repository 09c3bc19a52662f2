// The command line of the raw-limit tools (memcpy-limit, loopback-limit, pingpong-limit): up to
// a few positional counts, each with a default and a range, plus -h/--help and --version, read
// by common/cli's Flags so that they keep every tool's rules: "--version" or a typo is never
// taken for a number, and a bad count is refused naming it ("REPEATS '0': expected a count in
// [1, 1000]"), exit code 2.
#pragma once

#include <initializer_list>

namespace hoop::perf {

struct LimitArg {
  const char* name;  // as the usage text names it: "SIZE_MB"
  long long* value;  // holds the default; takes the given count
  long long lo, hi;
};

// Returns -1 when the tool should run, else the code to exit with: 0 after --help (prints
// `usage`) or --version, 2 after an error (printed as "PROG: ...").
int ParseLimitArgs(int argc, char** argv, const char* prog, const char* usage, std::initializer_list<LimitArg> args);

}  // namespace hoop::perf
