/* CHECK for the C test programs: a condition that fails prints
 *   "<CHECK_TAG> FAIL [rank R ]line L: <what> (<hoop_last_error()>)"
 * and exits 1. A program defines CHECK_TAG (its name, as its "ok" line says it) before including
 * this, and CHECK_RANK (an int expression, its rank) where it has one. CheckUsage answers -h/--help
 * and --version. */
#pragma once
#include <hoop/hoop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CHECK_TAG
#error "define CHECK_TAG before including c_check.h"
#endif

#ifdef CHECK_RANK
#define CHECK_WHERE() fprintf(stdout, CHECK_TAG " FAIL rank %d line %d: ", (CHECK_RANK), __LINE__)
#else
#define CHECK_WHERE() fprintf(stdout, CHECK_TAG " FAIL line %d: ", __LINE__)
#endif

#define CHECK(cond, ...)                             \
  do {                                               \
    if (!(cond)) {                                   \
      CHECK_WHERE();                                 \
      fprintf(stdout, __VA_ARGS__);                  \
      fprintf(stdout, " (%s)\n", hoop_last_error()); \
      exit(1);                                       \
    }                                                \
  } while (0)

/* -h/--help and --version, asked before anything else (so that neither starts a rank): prints
 * "usage: hoop-<CHECK_TAG>-test <usage>" or "hoop-<CHECK_TAG>-test (hoop) X.Y.Z" and exits 0.
 * `usage` is the arguments and what the program does, as its top comment says it. */
static inline void CheckUsage(int argc, char** argv, const char* usage) {
  if (argc < 2) return;
  if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
    fprintf(stdout, "usage: hoop-" CHECK_TAG "-test%s%s\n", usage[0] == '\n' ? "" : " ", usage);
    exit(0);
  }
  if (strcmp(argv[1], "--version") == 0) {
    fprintf(stdout, "hoop-" CHECK_TAG "-test (hoop) %d.%d.%d\n", HOOP_VERSION_MAJOR, HOOP_VERSION_MINOR,
            HOOP_VERSION_PATCH);
    exit(0);
  }
}
