/* libhoop_signals: what the signal actions were before any library under libhoop was loaded.
 *
 * UCX (libucs) installs signal handlers from its constructors, which run before libhoop's.
 * libhoop then gives each such signal back what the program had
 * (transport/util/crash_signals.cc), and to know that it needs a look taken before those
 * constructors ran. This library takes it: it is linked with -z initfirst, so the dynamic loader
 * runs its constructor before every other one of the objects loaded with it (at start-up, or in
 * the dlopen of a Python extension or a plugin that pulls libhoop in), and it depends on nothing
 * that installs handlers. C, and tiny, so that is all it does. (libfabric's psm libraries install
 * handlers too, when the ofi back end loads libfabric later: transport/registry.cc gives back
 * what was there just before.) */
#include <signal.h>
#include <string.h>

#include "transport/signals/at_load.h"

static struct sigaction g_actions[HOOP_SIGNALS_MAX];
static int g_taken;

__attribute__((constructor)) static void hoop_signals_take(void) {
  for (int sig = 1; sig < HOOP_SIGNALS_MAX; ++sig)
    if (sigaction(sig, NULL, &g_actions[sig]) != 0) memset(&g_actions[sig], 0, sizeof g_actions[sig]);
  g_taken = 1;
}

int hoop_signal_at_load(int sig, struct sigaction* out) {
  if (!g_taken || sig <= 0 || sig >= HOOP_SIGNALS_MAX || !out) return 0;
  *out = g_actions[sig];
  return 1;
}
