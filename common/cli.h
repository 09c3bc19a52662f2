// Command lines, read by CLI11 (Debian's libcli11-dev). Every tool declares its flags on a Flags
// and keeps hoop's conventions, which CLI11 alone does not give:
// - both `--flag value` and `--flag=value` (and `-n5` for a short flag), as CLI11 reads them;
// - errors name the flag as typed and the value, and say what was expected:
//   "--rotate '0': expected a count in [1, 64]"; "-z needs a value";
//   "unknown option '--maxbyte' (did you mean --maxbytes?)";
// - values are taken in command-line order (a later one wins; each is checked), after the whole
//   line has been read, so -h/--help and --version win wherever they stand;
// - the tool prints its own usage text, written by hand: it explains, where CLI11's generated
//   help would only list (tests/unit/cli_usage_test.cc checks that it names every declared flag);
// - OpenMPI's single-dash long flags (hooprun -np, -hostfile) are read as they are written.
// Each alias is its own CLI11 option with the same taker, which is how an error names the alias
// the user typed. Parsing is pure: nothing is printed and nothing exits.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/parse.h"
#include "common/status.h"

namespace CLI {
class App;
}

namespace hoop::cli {

class Flags {
 public:
  // Converts and stores one value; returns "" or what was expected ("expected 0 or 1"). The
  // error then reads "FLAG 'VALUE': " and that.
  using Take = std::function<std::string(const std::string& value)>;
  // Like Take, with the whole message its own (e.g. naming another flag): Status, not text.
  using TakeStatus = std::function<Status(const std::string& flag, const std::string& value)>;

  Flags();
  ~Flags();
  Flags(const Flags&) = delete;
  Flags& operator=(const Flags&) = delete;

  // names: comma-separated aliases, e.g. "-b,--minbytes" or "-np,-n,--np".
  void Value(const std::string& names, Take take);
  void Value(const std::string& names, TakeStatus take);
  // A flag without a value.
  void Switch(const std::string& names, bool* on);
  // Flags that end the reading where they stand (-h/--help, --version, hooprun's --agent): the
  // first one given sets its bool and nothing else is checked.
  void Early(const std::string& names, bool* on);
  // The first argument that is not a flag (a program to run) ends the flags: it and everything
  // after it are left to rest(). "--" ends them too. Without this, such an argument is an error.
  void StopAtPositional();

  // Reads argv[first..argc).
  Status Parse(int argc, char** argv, int first = 1);
  const std::vector<std::string>& rest() const { return rest_; }
  // Every declared name (for the usage test).
  std::vector<std::string> Names() const;

 private:
  struct Given {
    std::string flag, value;
    const TakeStatus* take;
  };
  std::vector<std::string> Add(const std::string& names);

  std::unique_ptr<CLI::App> app_;
  std::vector<std::string> names_;
  std::vector<std::string> dash_long_;  // single-dash names longer than one letter
  std::vector<std::string> value_names_;
  std::vector<std::unique_ptr<TakeStatus>> takes_;
  std::vector<std::pair<std::string, bool*>> early_;
  std::vector<Given> given_;
  std::vector<std::string> early_given_;
  std::vector<std::string> rest_;
  bool stop_at_positional_ = false;
};

// Common takers. Each stores into *out and returns "" or what was expected.
// An integer in [lo, hi] into any integer type: "expected an integer in [lo, hi]" (`what`
// names it otherwise: "a count").
template <typename T>
Flags::Take Int(T* out, long long lo, long long hi, const char* what = "an integer") {
  return [=](const std::string& v) -> std::string {
    auto n = ParseInt(v);
    if (!n || *n < lo || *n > hi)
      return std::string("expected ") + what + " in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    *out = static_cast<T>(*n);
    return "";
  };
}
Flags::Take Text(std::string* out);                                     // any value, even empty
Flags::Take NonEmpty(std::string* out, const char* what);               // "expected a file name"
Flags::Take Seconds(double* out);                                       // "expected a positive number of seconds"
Flags::Take OneOf(std::string* out, std::vector<std::string> allowed);  // "expected a, b or c"

}  // namespace hoop::cli
