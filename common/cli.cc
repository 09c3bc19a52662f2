// See cli.h. CLI11 reads the line; each option's callback (run as it is read) only records the
// flag and value, and Parse hands them to the takers in order once CLI11 is done.
#include "common/cli.h"

#include <CLI/CLI.hpp>

#include <algorithm>

#include "common/parse.h"
#include "common/suggest.h"

namespace hoop::cli {

namespace {
// A single-dash long name (-np) as CLI11 is told it: CLI11 would read -np as -n with value "p".
constexpr char kDashLong[] = "--hoop-single-dash-";
std::string DashLongName(const std::string& name) { return kDashLong + name.substr(1); }
// The name as the user typed it, from CLI11's (in its messages).
std::string Typed(const std::string& cli_name) {
  return cli_name.rfind(kDashLong, 0) == 0 ? "-" + cli_name.substr(sizeof kDashLong - 1) : cli_name;
}

bool IsDashLong(const std::string& name) { return name.size() > 2 && name[0] == '-' && name[1] != '-'; }

std::vector<std::string> Split(const std::string& names) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t comma = names.find(',', start);
    out.push_back(names.substr(start, comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

std::string Join(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) out += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  return out;
}
}  // namespace

Flags::Flags() : app_(std::make_unique<CLI::App>()) {
  app_->set_help_flag();  // the tools print their own usage (Early -h,--help)
  app_->allow_extras();   // unknown flags are named by Parse, with the nearest known one
}

Flags::~Flags() = default;

std::vector<std::string> Flags::Add(const std::string& names) {
  std::vector<std::string> split = Split(names);
  for (const std::string& n : split) {
    names_.push_back(n);
    if (IsDashLong(n)) dash_long_.push_back(n);
  }
  return split;
}

void Flags::Value(const std::string& names, Take take) {
  Value(names, [take = std::move(take)](const std::string& flag, const std::string& value) -> Status {
    std::string bad = take(value);
    if (bad.empty()) return Status::Ok();
    return InvalidArgument(flag + " '" + value + "': " + bad);
  });
}

void Flags::Value(const std::string& names, TakeStatus take) {
  takes_.push_back(std::make_unique<TakeStatus>(std::move(take)));
  const TakeStatus* t = takes_.back().get();
  for (const std::string& n : Add(names)) {
    value_names_.push_back(n);
    CLI::callback_t record = [this, n, t](const CLI::results_t& r) {
      for (const std::string& v : r) given_.push_back({n, v, t});
      return true;
    };
    app_->add_option(IsDashLong(n) ? DashLongName(n) : n, record)->trigger_on_parse()->allow_extra_args(false);
  }
}

void Flags::Switch(const std::string& names, bool* on) {
  for (const std::string& n : Add(names))
    app_->add_flag_callback(IsDashLong(n) ? DashLongName(n) : n, [on] { *on = true; })->trigger_on_parse();
}

void Flags::Early(const std::string& names, bool* on) {
  for (const std::string& n : Add(names)) {
    early_.emplace_back(n, on);
    app_->add_flag_callback(IsDashLong(n) ? DashLongName(n) : n, [this, n] { early_given_.push_back(n); })
        ->trigger_on_parse();
  }
}

void Flags::StopAtPositional() {
  stop_at_positional_ = true;
  app_->prefix_command();
}

std::vector<std::string> Flags::Names() const { return names_; }

Status Flags::Parse(int argc, char** argv, int first) {
  // The words CLI11 reads: single-dash long names renamed, up to where the flags end (a value
  // is skipped over, so a value that looks like one of those names is left alone).
  // "--" where a flag could stand ends the flags: what follows is left to rest() as it is.
  std::vector<std::string> words(argv + std::min(first, argc), argv + argc), after;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string w = words[i];  // as given: words[i] may be renamed below
    if (w == "--") {
      after.assign(words.begin() + static_cast<std::ptrdiff_t>(i) + 1, words.end());
      words.resize(i);
      if (!stop_at_positional_ && !after.empty()) return InvalidArgument("unexpected argument '" + after[0] + "'");
      break;
    }
    std::string name = w.substr(0, w.find('='));
    if (std::find(dash_long_.begin(), dash_long_.end(), name) != dash_long_.end())
      words[i] = DashLongName(name) + w.substr(name.size());
    if (std::find(value_names_.begin(), value_names_.end(), w) != value_names_.end())
      ++i;  // its value
    else if (w.empty() || w[0] != '-')
      break;  // the first positional
  }
  std::reverse(words.begin(), words.end());  // CLI11 reads a reversed vector
  given_.clear();
  early_given_.clear();
  try {
    app_->parse(words);
  } catch (const CLI::ArgumentMismatch& e) {
    // "NAME: 1 required TEXT missing": a flag at the end of the line, without its value.
    std::string what = e.what();
    if (!early_given_.empty()) return Status::Ok();
    return InvalidArgument(Typed(what.substr(0, what.find(':'))) + " needs a value");
  } catch (const CLI::ConversionError& e) {
    // "Could not convert: NAME = VALUE": a value given to a flag that takes none (--version=x).
    std::string what = e.what();
    const std::string head = "Could not convert: ";
    if (!early_given_.empty()) return Status::Ok();
    const size_t eq = what.find(" = ");
    if (what.rfind(head, 0) != 0 || eq == std::string::npos) return InvalidArgument(what);
    return InvalidArgument(Typed(what.substr(head.size(), eq - head.size())) + " takes no value ('" +
                           what.substr(eq + 3) + "' given)");
  } catch (const CLI::ParseError& e) {
    if (!early_given_.empty()) return Status::Ok();
    return InvalidArgument(e.what());
  }
  for (const auto& [name, on] : early_)
    if (!early_given_.empty() && early_given_.front() == name) {
      *on = true;
      return Status::Ok();
    }
  rest_ = app_->remaining();
  // Unknown flags: CLI11 leaves them (and, stopping at a positional, what follows) in remaining().
  for (const std::string& w : rest_) {
    if (w.size() < 2 || w[0] != '-' || ParseNonNegative(w.substr(1)).has_value()) {
      if (stop_at_positional_) break;
      return InvalidArgument("unexpected argument '" + w + "'");
    }
    std::string name = w.substr(0, w.find('='));
    std::string near = name.size() > 2 ? Nearest(name, names_) : "";  // not for '-' or '--='s empty name
    return InvalidArgument("unknown option '" + name + "'" + (near.empty() ? "" : " (did you mean " + near + "?)"));
  }
  for (const Given& g : given_) HOOP_RETURN_IF_ERROR((*g.take)(g.flag, g.value));
  rest_.insert(rest_.end(), after.begin(), after.end());
  return Status::Ok();
}

Flags::Take Text(std::string* out) {
  return [=](const std::string& v) -> std::string {
    *out = v;
    return "";
  };
}

Flags::Take NonEmpty(std::string* out, const char* what) {
  return [=](const std::string& v) -> std::string {
    if (v.empty()) return std::string("expected ") + what;
    *out = v;
    return "";
  };
}

Flags::Take Seconds(double* out) {
  return [=](const std::string& v) -> std::string {
    auto s = ParseSeconds(v);
    if (!s) return "expected a positive number of seconds";
    *out = *s;
    return "";
  };
}

Flags::Take OneOf(std::string* out, std::vector<std::string> allowed) {
  return [=](const std::string& v) -> std::string {
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) return "expected " + Join(allowed);
    *out = v;
    return "";
  };
}

}  // namespace hoop::cli
