// The back-end registry: name -> factory, kept in priority order.
#include <algorithm>
#include <mutex>

#include "transport/transport.h"
#include "transport/util/crash_signals.h"

namespace hoop {
namespace {
struct Entry {
  std::string name;
  int priority;
  TransportFactory factory;
  TransportDescriber describe;
};
struct Registry {
  std::mutex mu;
  std::vector<Entry> entries;
};
Registry& TheRegistry() {
  static Registry r;
  return r;
}
}  // namespace

void RegisterTransport(const std::string& name, int priority, TransportFactory factory, TransportDescriber describe) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.entries.push_back({name, priority, std::move(factory), std::move(describe)});
  std::stable_sort(r.entries.begin(), r.entries.end(),
                   [](const Entry& a, const Entry& b) { return a.priority < b.priority; });
}

std::vector<std::string> RegisteredTransports() {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (auto& e : r.entries) names.push_back(e.name);
  return names;
}

std::string DescribeTransport(const std::string& name) {
  TransportDescriber d;
  {
    Registry& r = TheRegistry();
    std::lock_guard<std::mutex> lock(r.mu);
    for (auto& e : r.entries)
      if (e.name == name) d = e.describe;
  }
  if (!d) return "";
  // A back end's library may be loaded only now (libfabric: transport/ofi/libfabric.h), and its
  // constructors take signals as they would in CreateTransport.
  const SignalActions before = SaveSignalActions();
  std::string text = d();
  RestoreBackEndSignals(before);
  return text;
}

StatusOr<std::unique_ptr<Transport>> CreateTransport(const std::string& name, const TransportOptions& opts) {
  Registry& r = TheRegistry();
  TransportFactory f;
  std::string known;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    for (auto& e : r.entries) {
      known += (known.empty() ? "" : ", ") + e.name;
      if (e.name == name) f = e.factory;
    }
  }
  if (!f) return InvalidArgument("transport '" + name + "' is not built in (available: " + known + ")");
  // A back end may load libraries (providers) that install their own handlers: the program's
  // come back as they were just before.
  const SignalActions before = SaveSignalActions();
  auto t = f(opts);
  RestoreBackEndSignals(before);
  return t;
}

}  // namespace hoop
