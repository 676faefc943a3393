// Small text helpers for user-facing messages.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace lemmalab {

// Optimal-string-alignment edit distance (Levenshtein plus adjacent transpositions).
int EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word`, if one is close enough to be a plausible typo.
std::optional<std::string> ClosestMatch(std::string_view word,
                                        std::span<const std::string> candidates);

// " (did you mean 'x'?)" or "" when nothing is close.
std::string DidYouMean(std::string_view word, std::span<const std::string> candidates);

// "unknown <kind> '<name>'" followed by " (did you mean 'x'?)" when one candidate is close, or
// by " (known: a, b, c)" otherwise.
std::string UnknownName(std::string_view kind, std::string_view name,
                        std::span<const std::string> candidates);

// "a, b, c"
std::string JoinNames(std::span<const std::string> names);

}  // namespace lemmalab
