#include "core/text.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

namespace lemmalab {

int EditDistance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

std::optional<std::string> ClosestMatch(std::string_view word,
                                        std::span<const std::string> candidates) {
  // A typo changes at most about a third of a word, and never more than 3 characters.
  const int limit = std::clamp(static_cast<int>(word.size()) / 3, 1, 3);
  std::optional<std::string> best;
  int best_distance = limit + 1;
  for (const std::string& c : candidates) {
    const int distance = EditDistance(word, c);
    if (distance < best_distance) {
      best_distance = distance;
      best = c;
    }
  }
  return best;
}

std::string DidYouMean(std::string_view word, std::span<const std::string> candidates) {
  const auto match = ClosestMatch(word, candidates);
  return match ? fmt::format(" (did you mean '{}'?)", *match) : std::string();
}

std::string UnknownName(std::string_view kind, std::string_view name,
                        std::span<const std::string> candidates) {
  const std::string hint = DidYouMean(name, candidates);
  return hint.empty()
             ? fmt::format("unknown {} '{}' (known: {})", kind, name, JoinNames(candidates))
             : fmt::format("unknown {} '{}'{}", kind, name, hint);
}

std::string JoinNames(std::span<const std::string> names) {
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace lemmalab
