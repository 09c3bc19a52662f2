/* CHECK for the C test programs: a condition that fails prints
 *   "<CHECK_TAG> FAIL [rank R ]line L: <what> (<hoop_last_error()>)"
 * and exits 1. A program defines CHECK_TAG (its name, as its "ok" line says it) before including
 * this, and CHECK_RANK (an int expression, its rank) where it has one. */
#pragma once
#include <hoop/hoop.h>
#include <stdio.h>
#include <stdlib.h>

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
