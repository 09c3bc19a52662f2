/* libhoop_signals (at_load.c): the signal actions as they were before the libraries under
 * libhoop ran their constructors. */
#pragma once
#include <signal.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HOOP_SIGNALS_MAX 32 /* the classic signals; the back ends touch none above */

/* Copies signal `sig`'s action as it was at load into *out and returns 1; 0 if no look was taken
 * (sig out of range, or the library's constructor did not run). */
int hoop_signal_at_load(int sig, struct sigaction* out);

#ifdef __cplusplus
}
#endif
