// Text from a caller (tensor names, error messages, host names) as a JSON string: quoted, with
// quotes, backslashes and control characters escaped. What hoop writes as JSON by hand (the
// fusion timeline, the flight recorder's dumps) goes through it.
#pragma once
#include <string>

namespace hoop {

std::string JsonQuoted(const std::string& text);

}  // namespace hoop
