// hoop::cli::Flags (common/cli.h): CLI11's reading with hoop's conventions on top: both value
// forms, errors that name the flag as typed, the nearest known flag, help that wins, OpenMPI's
// single-dash long flags and a command left where the flags end.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "common/cli.h"

namespace hoop::cli {
namespace {

struct Line {
  std::vector<std::string> words;
  std::vector<char*> argv;
  explicit Line(std::vector<std::string> w) : words(std::move(w)) {
    for (std::string& s : words) argv.push_back(s.data());
  }
  int argc() const { return static_cast<int>(argv.size()); }
};

struct Tool {
  Flags flags;
  int n = 0;
  std::string mode, port;
  std::vector<std::string> env;
  bool verbose = false, help = false, version = false;
  Tool() {
    flags.Early("-h,--help", &help);
    flags.Early("--version", &version);
    flags.Value("-np,-n,--np", Int(&n, 1, 64));
    flags.Value("-m,--mode", OneOf(&mode, {"fast", "slow"}));
    flags.Value("-x", [this](const std::string& v) {
      env.push_back(v);
      return std::string();
    });
    flags.Value("-p,--port", Text(&port));
    flags.Switch("-v,--verbose", &verbose);
  }
  Status Parse(std::vector<std::string> w) {
    w.insert(w.begin(), "tool");
    Line l(std::move(w));
    return flags.Parse(l.argc(), l.argv.data());
  }
};

TEST_CASE("cli: values with a space, with '=' and joined to a short flag", "[cli]") {
  Tool t;
  REQUIRE(t.Parse({"--np=3", "-m", "slow", "-v"}).ok());
  CHECK(t.n == 3);
  CHECK(t.mode == "slow");
  CHECK(t.verbose);
  Tool u;
  REQUIRE(u.Parse({"-n5", "--mode=fast"}).ok());
  CHECK(u.n == 5);
  CHECK(u.mode == "fast");
}

TEST_CASE("cli: OpenMPI's -np is read as written, not as -n with value 'p'", "[cli]") {
  Tool t;
  REQUIRE(t.Parse({"-np", "4"}).ok());
  CHECK(t.n == 4);
  Tool u;
  REQUIRE(u.Parse({"-np=6"}).ok());
  CHECK(u.n == 6);
}

TEST_CASE("cli: repeated values are taken in order, the last one wins", "[cli]") {
  Tool t;
  REQUIRE(t.Parse({"-x", "A=1", "-n", "2", "-x", "B", "--np", "7"}).ok());
  CHECK(t.env == std::vector<std::string>{"A=1", "B"});
  CHECK(t.n == 7);
}

TEST_CASE("cli: errors name the flag as typed, the value and what was expected", "[cli]") {
  Tool t;
  Status s = t.Parse({"-m", "quick"});
  CHECK(s.message() == "-m 'quick': expected fast or slow");
  Tool u;
  CHECK(u.Parse({"--np", "0"}).message() == "--np '0': expected an integer in [1, 64]");
  Tool w;
  CHECK(w.Parse({"-np", "65"}).message() == "-np '65': expected an integer in [1, 64]");
  Tool v;
  CHECK(v.Parse({"-v", "--mode"}).message() == "--mode needs a value");
  Tool x;
  CHECK(x.Parse({"-np"}).message() == "-np needs a value");
  Tool y;
  CHECK(y.Parse({"--verbose=loud"}).message() == "--verbose takes no value ('loud' given)");
}

TEST_CASE("cli: a value that looks like a number or a flag is still the flag's value", "[cli]") {
  Tool t;
  REQUIRE(t.Parse({"-p", "-1"}).ok());
  CHECK(t.port == "-1");
  Tool u;
  REQUIRE(u.Parse({"-p", "-np"}).ok());
  CHECK(u.port == "-np");
  CHECK(u.n == 0);
}

TEST_CASE("cli: an unknown flag is named with the nearest known one", "[cli]") {
  Tool t;
  CHECK(t.Parse({"--verbos"}).message() == "unknown option '--verbos' (did you mean --verbose?)");
  Tool u;
  CHECK(u.Parse({"--mdoe=fast"}).message() == "unknown option '--mdoe' (did you mean --mode?)");
  Tool v;
  CHECK(v.Parse({"--colour", "red"}).message() == "unknown option '--colour'");
  Tool w;
  CHECK(w.Parse({"-n", "2", "stray"}).message() == "unexpected argument 'stray'");
}

TEST_CASE("cli: help and version win wherever they stand, over bad values", "[cli]") {
  Tool t;
  REQUIRE(t.Parse({"-m", "quick", "--help"}).ok());
  CHECK(t.help);
  Tool u;
  REQUIRE(u.Parse({"--version", "-n", "0"}).ok());
  CHECK(u.version);
  CHECK_FALSE(u.help);
  Tool v;
  REQUIRE(v.Parse({"-h", "--version"}).ok());
  CHECK(v.help);
  CHECK_FALSE(v.version);
}

TEST_CASE("cli: the first positional ends the flags; the rest is left as given", "[cli]") {
  Tool t;
  t.flags.StopAtPositional();
  REQUIRE(t.Parse({"-np", "2", "python3", "train.py", "-np", "5", "--help"}).ok());
  CHECK(t.n == 2);
  CHECK_FALSE(t.help);
  CHECK(t.flags.rest() == std::vector<std::string>{"python3", "train.py", "-np", "5", "--help"});
  Tool u;
  u.flags.StopAtPositional();
  REQUIRE(u.Parse({"-n", "1", "--", "-weird-name", "x"}).ok());
  CHECK(u.flags.rest() == std::vector<std::string>{"-weird-name", "x"});
  Tool v;
  v.flags.StopAtPositional();
  CHECK(v.Parse({"--bogus", "prog"}).message() == "unknown option '--bogus'");
  Tool w;  // after a single-dash long flag and its value
  w.flags.StopAtPositional();
  REQUIRE(w.Parse({"-np", "3", "--", "-prog", "-np"}).ok());
  CHECK(w.n == 3);
  CHECK(w.flags.rest() == std::vector<std::string>{"-prog", "-np"});
}

TEST_CASE("cli: Names lists every alias declared", "[cli]") {
  Tool t;
  std::vector<std::string> names = t.flags.Names();
  for (const char* n :
       {"-h", "--help", "--version", "-np", "-n", "--np", "-m", "--mode", "-x", "-p", "--port", "-v", "--verbose"})
    CHECK(std::find(names.begin(), names.end(), n) != names.end());
}

}  // namespace
}  // namespace hoop::cli
