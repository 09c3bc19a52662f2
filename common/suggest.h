// "Did you mean ...?": the known word nearest to a misspelt one by edit distance (insertions,
// deletions, substitutions and swaps of neighbours each count one), if it is near enough to be
// a likely typo: at most 1 edit for words up to 4 letters, 2 up to 12, 3 beyond. Case is ignored.
#pragma once

#include <string>
#include <vector>

namespace hoop {

// The nearest of `known` to `word`, or "" when none is near enough.
std::string Nearest(const std::string& word, const std::vector<std::string>& known);

}  // namespace hoop
