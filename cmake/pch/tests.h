// The tests' precompiled header (cmake/pch.cmake): the standard headers and Catch2's single
// header, which every test file includes and which costs more to parse than most test files.
#pragma once
#include "cmake/pch/std.h"

#include <catch2/catch.hpp>
