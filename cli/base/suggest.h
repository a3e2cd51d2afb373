#pragma once
// "Did you mean ...?" for misspelt keys and values.

#include <string>
#include <string_view>
#include <vector>

namespace ktrain {

/// The optimal-string-alignment (Damerau-Levenshtein) distance between `a` and `b`:
/// insertions, deletions, substitutions and transpositions of adjacent characters.
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `word` when it is close enough to be a likely typo
/// (distance 1 for short words, 2 from five characters, case-insensitive), or "".
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace ktrain
