// The line every hoop tool prints for --version: "PROG (hoop) X.Y.Z", the version CMake's
// project() gives (HOOP_VERSION_STRING, defined for every target by the top CMakeLists.txt).
#pragma once

#include <string>

namespace hoop {

inline std::string VersionLine(const char* prog) { return std::string(prog) + " (hoop) " HOOP_VERSION_STRING; }

}  // namespace hoop
