// The standard headers most of hoop's C++ files include, precompiled once per target
// (cmake/pch.cmake) so that each file does not parse them again. Only headers that are already
// included all over belong here: the list changes build time, never meaning.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>
