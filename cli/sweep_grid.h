// A spec's [sweep] table: axes over option paths, expanded into the points `lemmalab sweep` runs.
//
//   [sweep]
//   optimizer.beta = [0.9, 0.95, 0.99]            # an axis: an option path and its values
//   optimizer.compressor = ["stochastic-binary", "sign", { name = "top-k", fraction = 0.1 }]
//   seed = [1, 2, 3]                              # the replicate axis: reports average over it
//   schedule.lr = [0.01, 0.003]
//   zip = [["optimizer.beta", "schedule.lr"]]     # axes that advance together (equal lengths)
//   exclude = [{ optimizer.beta = 0.99, optimizer.compressor = "sign" }]
//
// A path names an option as the spec would set it: a top-level key (`seed`, `workers`, `steps`),
// a key of a table (`problem.batch_size`, `network.inter`, `schedule.lr`, `data.alpha`), or an
// optimizer's option (`optimizer.beta`, `optimizer.compressor.k`), which sets it on every
// [[optimizer]]; `optimizer.<label>.beta` sets it on the optimizer with that label only. A
// component given by name (`compressor = "sign"`) becomes a table when a path reaches into it.
//
// The points are the cartesian product of the axes (a zip group counts as one axis), in the
// order of the axis paths, alphabetical with `seed` last, the last varying fastest; a point
// matching every entry of an `exclude` table is left out. Each point is labelled by its values,
// "beta=0.9 compressor=sign seed=1" (an axis by its last path part, or its whole path where two
// axes share the last part). Every axis, zip group and exclusion is checked here; whether each
// point's values are valid options is checked by building the point (cli/sweep.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/options.h"
#include "engine/spec.h"

namespace lemmalab {

struct SweepAxis {
  std::string path;  // "optimizer.beta"
  std::string name;  // how labels and columns show it: "beta"
  std::vector<OptionValue> values;
};

// The most points a sweep may have (before exclusions): each is a whole run.
inline constexpr std::uint64_t kMaxSweepPoints = 100'000;

struct SweepPoint {
  int index = 0;      // 1, 2, ... in expansion order (exclusions leave gaps)
  std::string label;  // "beta=0.9 compressor=sign seed=1": the point's name in the results
  // One value per axis, in the order of SweepGrid::axes.
  std::vector<const OptionValue*> values;
};

struct SweepGrid {
  std::vector<SweepAxis> axes;
  std::vector<SweepPoint> points;
  int expanded = 0;  // points before exclusions
};

// Reads a [sweep] table (every key; UserError naming the key and the rule it broke).
SweepGrid ExpandSweep(OptionTable& sweep);

// The spec's top-level table with the point's values set at their paths, as a copy; the copy has
// no [sweep] table. UserError when a path does not lead to an option (a value where a table is
// needed, an [[optimizer]] label that does not exist).
std::shared_ptr<OptionTable> ApplyPoint(const OptionTable& root, const SweepGrid& grid,
                                        const SweepPoint& point);

}  // namespace lemmalab
