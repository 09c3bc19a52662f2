// The main of every Catch2 test program (hoop-unit-tests, hoop-multiproc-tests, ...): Catch2's
// own command line (-h/--help lists it), plus --version as every hoop tool answers it:
// "PROG (hoop) X.Y.Z".
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    const char* slash = std::strrchr(argv[0], '/');
    std::printf("%s (hoop) %s\n", slash ? slash + 1 : argv[0], HOOP_VERSION_STRING);
    return 0;
  }
  return Catch::Session().run(argc, argv);
}
