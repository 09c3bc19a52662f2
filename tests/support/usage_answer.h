// -h/--help and --version for the test rank programs (hoop-test-rank, hoop-probe-rank,
// hoop-fusion-rank), answered before anything else so that neither joins a job: the usage text
// on stdout, or "PROG (hoop) X.Y.Z" (HOOP_VERSION_STRING, which the top CMakeLists.txt defines for
// every target). Without a mode the usage goes to stderr and the program exits 2.
#pragma once

#include <cstdio>
#include <cstring>

namespace hoop::test {

// -1: go on with the mode in argv[1]; otherwise the code to exit with.
inline int AnswerUsage(int argc, char** argv, const char* prog, const char* usage) {
  if (argc < 2) {
    std::fputs(usage, stderr);
    return 2;
  }
  if (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
    std::fputs(usage, stdout);
    return 0;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    std::printf("%s (hoop) %s\n", prog, HOOP_VERSION_STRING);
    return 0;
  }
  return -1;
}

}  // namespace hoop::test
