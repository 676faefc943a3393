#include "cli/sweep_grid.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "core/text.h"
#include "engine/spec.h"

namespace lemmalab {
namespace {

constexpr std::string_view kZip = "zip", kExclude = "exclude", kSeed = "seed";

// The leaves of a table written with dotted keys (`optimizer.beta = ...` is a table `optimizer`
// holding `beta`), as (path, value, the table holding it, its key there).
struct Leaf {
  std::string path;
  const OptionValue* value;
  const OptionTable* table;
  std::string key;
};

void Flatten(const OptionTable& table, const std::string& prefix, std::vector<Leaf>& out) {
  for (const auto& [key, value] : table.entries()) {
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (const auto* child = std::get_if<OptionValue::Table>(&value.data)) {
      Flatten(**child, path, out);
    } else {
      out.push_back({path, &value, &table, key});
    }
  }
}

// A zip entry: a list of axis paths (or a list of such lists).
std::vector<std::vector<std::string>> ReadZip(OptionTable& sweep) {
  std::vector<std::vector<std::string>> groups;
  const OptionValue& zip = sweep.entries().find(kZip)->second;
  const auto* items = std::get_if<OptionValue::Array>(&zip.data);
  const auto paths = [&](const OptionValue::Array& list) {
    std::vector<std::string> group;
    for (const OptionValue& item : list) {
      const auto* path = std::get_if<std::string>(&item.data);
      if (path == nullptr) {
        sweep.Fail(kZip, fmt::format("zip groups list axis paths as strings (zip = "
                                     "[[\"optimizer.beta\", \"schedule.lr\"]]), got {} {}",
                                     item.TypeName(), item.Show()));
      }
      group.push_back(*path);
    }
    return group;
  };
  if (items == nullptr || items->empty()) {
    sweep.Fail(kZip,
               "zip must be a list of groups of axis paths, e.g. zip = [[\"optimizer.beta\", "
               "\"schedule.lr\"]]");
  }
  if (std::holds_alternative<std::string>(items->front().data)) return {paths(*items)};
  for (const OptionValue& item : *items) {
    const auto* group = std::get_if<OptionValue::Array>(&item.data);
    if (group == nullptr) {
      sweep.Fail(kZip, fmt::format("each zip group is a list of axis paths, got {} {}",
                                   item.TypeName(), item.Show()));
    }
    groups.push_back(paths(*group));
  }
  return groups;
}

std::vector<const OptionTable*> ReadExclusions(OptionTable& sweep) {
  const OptionValue& value = sweep.entries().find(kExclude)->second;
  if (const auto* table = std::get_if<OptionValue::Table>(&value.data)) return {table->get()};
  std::vector<const OptionTable*> out;
  if (const auto* items = std::get_if<OptionValue::Array>(&value.data)) {
    for (const OptionValue& item : *items) {
      const auto* table = std::get_if<OptionValue::Table>(&item.data);
      if (table == nullptr) {
        sweep.Fail(kExclude, fmt::format("exclude lists tables of axis values (exclude = "
                                         "[{{ optimizer.beta = 0.99, seed = 1 }}]), got {} {}",
                                         item.TypeName(), item.Show()));
      }
      out.push_back(table->get());
    }
    return out;
  }
  sweep.Fail(kExclude,
             "exclude must be a list of tables of axis values, e.g. exclude = "
             "[{ optimizer.beta = 0.99, seed = 1 }]");
}

// Axis display names: the last path part, or the whole path where two axes share it.
void NameAxes(std::vector<SweepAxis>& axes) {
  std::map<std::string, int> count;
  for (SweepAxis& axis : axes) ++count[SplitPath(axis.path).back()];
  for (SweepAxis& axis : axes) {
    const std::string last = SplitPath(axis.path).back();
    axis.name = count[last] == 1 ? last : axis.path;
  }
}

}  // namespace

SweepGrid ExpandSweep(OptionTable& sweep) {
  std::vector<Leaf> leaves;
  Flatten(sweep, "", leaves);
  SweepGrid grid;
  for (const Leaf& leaf : leaves) {
    if (leaf.path == kZip || leaf.path == kExclude) continue;
    const auto* values = std::get_if<OptionValue::Array>(&leaf.value->data);
    if (values == nullptr) {
      leaf.table->Fail(leaf.key, fmt::format("the sweep axis {} must be a list of values "
                                             "({} = [{}, ...]), got {} {}",
                                             leaf.path, leaf.path, leaf.value->Show(),
                                             leaf.value->TypeName(), leaf.value->Show()));
    }
    if (values->empty()) leaf.table->Fail(leaf.key, fmt::format("the axis {} is empty", leaf.path));
    grid.axes.push_back({leaf.path, "", *values});
  }
  if (grid.axes.empty()) {
    throw UserError(
        fmt::format("{}: [sweep] has no axis: give an option path and its values, "
                    "e.g. optimizer.beta = [0.9, 0.99]",
                    sweep.where()));
  }
  // Alphabetical (the table's order) with the replicate axis innermost.
  std::stable_partition(grid.axes.begin(), grid.axes.end(),
                        [](const SweepAxis& a) { return a.path != kSeed; });
  NameAxes(grid.axes);

  const auto axis_index = [&](const std::string& path, std::string_view key) {
    for (std::size_t a = 0; a < grid.axes.size(); ++a) {
      if (grid.axes[a].path == path) return a;
    }
    std::vector<std::string> paths;
    for (const SweepAxis& axis : grid.axes) paths.push_back(axis.path);
    sweep.Fail(key,
               fmt::format("{} is not an axis of this sweep (axes: {})", path, JoinNames(paths)));
  };

  // Units of the product: each zip group, and every axis in no group.
  std::vector<std::vector<std::size_t>> units;
  std::vector<bool> zipped(grid.axes.size(), false);
  if (sweep.entries().contains(kZip)) {
    for (const std::vector<std::string>& group : ReadZip(sweep)) {
      std::vector<std::size_t> unit;
      for (const std::string& path : group) {
        const std::size_t a = axis_index(path, kZip);
        if (zipped[a]) sweep.Fail(kZip, fmt::format("{} is in two zip groups", path));
        zipped[a] = true;
        if (grid.axes[a].values.size() !=
            grid.axes[unit.empty() ? a : unit.front()].values.size()) {
          sweep.Fail(
              kZip, fmt::format("zipped axes advance together and need equally many "
                                "values: {} has {}, {} has {}",
                                grid.axes[unit.front()].path, grid.axes[unit.front()].values.size(),
                                path, grid.axes[a].values.size()));
        }
        unit.push_back(a);
      }
      if (unit.size() < 2) sweep.Fail(kZip, "a zip group needs at least two axes");
      units.push_back(std::move(unit));
    }
  }
  for (std::size_t a = 0; a < grid.axes.size(); ++a) {
    if (!zipped[a]) units.push_back({a});
  }
  std::sort(units.begin(), units.end(),
            [](const auto& x, const auto& y) { return x.front() < y.front(); });
  // A unit's values must differ (a zip group's may repeat one axis's value, not a whole tuple).
  for (const std::vector<std::size_t>& unit : units) {
    std::set<std::string> seen;
    for (std::size_t v = 0; v < grid.axes[unit.front()].values.size(); ++v) {
      std::vector<std::string> tuple;
      for (const std::size_t a : unit) tuple.push_back(ShowValue(grid.axes[a].values[v]));
      if (seen.insert(fmt::format("{}", fmt::join(tuple, ", "))).second) continue;
      if (unit.size() == 1) {
        sweep.Fail(
            SplitPath(grid.axes[unit.front()].path).front(),
            fmt::format("the axis {} lists {} twice", grid.axes[unit.front()].path, tuple.front()));
      }
      sweep.Fail(kZip, fmt::format("the zipped axes list ({}) twice", fmt::join(tuple, ", ")));
    }
  }

  // Exclusions: each a set of (axis, value) that must all match.
  struct Exclusion {
    std::vector<std::pair<std::size_t, std::string>> match;
    int hits = 0;
  };
  std::vector<Exclusion> exclusions;
  if (sweep.entries().contains(kExclude)) {
    for (const OptionTable* table : ReadExclusions(sweep)) {
      std::vector<Leaf> entries;
      Flatten(*table, "", entries);
      Exclusion exclusion;
      for (const Leaf& entry : entries) {
        const std::size_t a = axis_index(entry.path, kExclude);
        const std::string shown = ShowValue(*entry.value);
        const auto& values = grid.axes[a].values;
        if (std::none_of(values.begin(), values.end(),
                         [&](const OptionValue& v) { return ShowValue(v) == shown; })) {
          std::vector<std::string> listed;
          for (const OptionValue& v : values) listed.push_back(ShowValue(v));
          sweep.Fail(kExclude, fmt::format("exclude: {} = {} is not among the axis's values ({})",
                                           entry.path, shown, fmt::join(listed, ", ")));
        }
        exclusion.match.emplace_back(a, shown);
      }
      if (exclusion.match.empty()) sweep.Fail(kExclude, "an exclude table is empty");
      exclusions.push_back(std::move(exclusion));
    }
  }

  // The size of the product, counted before anything is expanded: each point is a whole run,
  // and a few dozen short axes multiply to more points than memory holds labels for.
  std::uint64_t product = 1;
  bool more = false;  // the product stopped being counted past the limit
  std::vector<std::string> factors;
  for (const std::vector<std::size_t>& unit : units) {
    const std::uint64_t n = grid.axes[unit.front()].values.size();
    factors.push_back(fmt::format("{}", n));
    if (product > kMaxSweepPoints) {
      more = true;
    } else {
      product *= n;  // at most 100 000 x the values a 256 KiB spec can list: no overflow
    }
  }
  if (product > kMaxSweepPoints) {
    sweep.Fail(
        SplitPath(grid.axes[units.front().front()].path).front(),
        fmt::format("the axes make {}{} points ({}); a sweep runs at most {} (split it "
                    "into several sweeps, or zip axes that advance together)",
                    more ? "more than " : "", product, fmt::join(factors, " x "), kMaxSweepPoints));
  }

  // The product, the last unit varying fastest.
  std::vector<std::size_t> position(units.size(), 0);
  for (int index = 1;; ++index) {
    SweepPoint point;
    point.index = index;
    point.values.resize(grid.axes.size());
    for (std::size_t u = 0; u < units.size(); ++u) {
      for (const std::size_t a : units[u]) point.values[a] = &grid.axes[a].values[position[u]];
    }
    bool excluded = false;
    for (Exclusion& exclusion : exclusions) {
      const bool all = std::all_of(exclusion.match.begin(), exclusion.match.end(), [&](auto& m) {
        return ShowValue(*point.values[m.first]) == m.second;
      });
      if (all) {
        ++exclusion.hits;
        excluded = true;
      }
    }
    grid.expanded = index;
    if (!excluded) {
      std::vector<std::string> parts;
      for (std::size_t a = 0; a < grid.axes.size(); ++a) {
        parts.push_back(fmt::format("{}={}", grid.axes[a].name, ShowValue(*point.values[a])));
      }
      point.label = fmt::format("{}", fmt::join(parts, " "));
      grid.points.push_back(std::move(point));
    }
    // Advance the last unit; a unit that wraps carries into the one before it.
    std::size_t u = units.size();
    while (u > 0 && ++position[u - 1] == grid.axes[units[u - 1].front()].values.size()) {
      position[--u] = 0;
    }
    if (u == 0) break;
  }
  for (std::size_t k = 0; k < exclusions.size(); ++k) {
    if (exclusions[k].hits == 0) {
      sweep.Fail(kExclude, fmt::format("exclude table #{} matches no point of the sweep", k + 1));
    }
  }
  if (grid.points.empty()) sweep.Fail(kExclude, "the exclusions leave no point to run");
  return grid;
}

std::shared_ptr<OptionTable> ApplyPoint(const OptionTable& root, const SweepGrid& grid,
                                        const SweepPoint& point) {
  std::shared_ptr<OptionTable> out = root.Clone();
  out->Erase("sweep");
  for (std::size_t a = 0; a < grid.axes.size(); ++a) {
    SetSpecOption(*out, grid.axes[a].path, *point.values[a]);
  }
  return out;
}

}  // namespace lemmalab
