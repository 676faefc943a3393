#include "cli/list.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

#include "batched/optimizers.h"
#include "comm/network.h"
#include "comm/scheme.h"
#include "compressors/compressor.h"
#include "core/error.h"
#include "core/options.h"
#include "core/text.h"
#ifdef LEMMALAB_HAVE_CUDA
#include "cuda/runtime.h"
#endif
#include "optimizers/optimizer.h"
#include "optimizers/schedule.h"
#include "problems/dataset.h"
#include "problems/problem.h"
#include "theory/assertion.h"
#include "theory/metrics.h"
#include "theory/probe.h"

namespace lemmalab {
namespace {

// What `build` reads from a table naming the component (`name` aside). A required option that is
// missing stops the build: it is given a number (or an integer) and the build tried again, so
// that the options read after it are listed too.
std::vector<OptionTable::Use> OptionsRead(std::string_view name,
                                          const std::function<void(OptionTable&)>& build,
                                          std::string_view name_key = "name") {
  std::vector<std::pair<std::string, OptionValue>> given;
  std::vector<OptionTable::Use> uses;
  for (int attempt = 0; attempt < 16; ++attempt) {
    OptionTable table(fmt::format("'{}'", name), "");
    table.Set(std::string(name_key), {std::string(name), ""});
    for (const auto& [key, value] : given) table.Set(key, value);
    try {
      build(table);
      uses = table.uses();
      break;
    } catch (const UserError&) {
      uses = table.uses();
      // The required key it stopped at: the last one listed that the table does not hold.
      const auto missing = std::find_if(uses.rbegin(), uses.rend(), [&](const auto& use) {
        return use.description.ends_with("required") && !table.Has(use.key);
      });
      if (missing == uses.rend()) break;
      if (missing->description.starts_with("a number")) {
        given.emplace_back(missing->key, OptionValue{0.5, ""});
      } else if (missing->description.starts_with("an integer")) {
        given.emplace_back(missing->key, OptionValue{std::int64_t{1}, ""});
      } else if (missing->description.starts_with("a string")) {
        given.emplace_back(missing->key, OptionValue{std::string("x"), ""});
      } else {
        break;
      }
    }
  }
  std::erase_if(uses, [&](const OptionTable::Use& use) { return use.key == name_key; });
  return uses;
}

struct Item {
  std::string name;
  std::string summary;
  std::string source;  // paper reference, where the registry gives one
  std::vector<OptionTable::Use> options;
};

struct Section {
  std::string kind;
  std::string title;
  std::vector<Item> items;
};

// Where the work can run: the CPU always; the CUDA kernels when this build has them, with the
// devices the runtime sees now.
Section DevicesSection() {
  Section devices{"devices", "devices (what this build can compute on)", {}};
  devices.items.push_back({"cpu", "simulated workers on OpenMP threads; every run", "", {}});
#ifdef LEMMALAB_HAVE_CUDA
  devices.items.push_back(
      {"cuda",
       fmt::format("built: device = \"cuda\" steps the optimizers that have a batched form "
                   "({}) on the GPU; the gradients stay on the CPU (docs/gpu.md). {}",
                   fmt::join(batched::BatchedOptimizerNames(), ", "),
                   cuda::Describe(cuda::QueryDevices())),
       "",
       {}});
#else
  devices.items.push_back(
      {"cuda", "not built: CMake found no CUDA toolkit (or LEMMALAB_CUDA=OFF)", "", {}});
#endif
  return devices;
}

std::vector<Section> Sections() {
  std::vector<Section> sections;
  Section& optimizers =
      sections.emplace_back(Section{"optimizers", "optimizers ([[optimizer]])", {}});
  for (const OptimizerInfo& e : Optimizers().entries()) {
    optimizers.items.push_back({std::string(e.name), std::string(e.summary),
                                std::string(e.reference), OptimizerOptions(e)});
  }
  Section& compressors = sections.emplace_back(
      Section{"compressors", "compressors ([[optimizer]] compressor = { name = ... })", {}});
  for (const CompressorInfo& e : Compressors().entries()) {
    compressors.items.push_back({std::string(e.name), std::string(e.summary), "",
                                 OptionsRead(e.name, [&](OptionTable& t) { e.make_f64(t); })});
  }
  Section& problems = sections.emplace_back(Section{"problems", "problems ([problem])", {}});
  for (const ProblemInfo& e : Problems().entries()) {
    // Options only: what a run reads before its data load, so the problems that learn from
    // data list theirs too.
    problems.items.push_back(
        {std::string(e.name), std::string(e.summary), "", OptionsRead(e.name, [&](OptionTable& t) {
           e.make_f64(t, {.workers = 2, .seed = 1, .data = nullptr, .options_only = true});
         })});
  }
  Section& data = sections.emplace_back(Section{"data", "data ([data] source)", {}});
  for (const DataSourceInfo& e : DataSources().entries()) {
    // Through LoadData, so the options every source shares (normalize, samples) are listed too.
    DataContext listing;
    listing.options_only = true;
    data.items.push_back({std::string(e.name), std::string(e.summary), "",
                          OptionsRead(
                              e.name, [&](OptionTable& t) { LoadData(t, listing); }, "source")});
  }
  Section& schedules = sections.emplace_back(Section{"schedules", "schedules ([schedule])", {}});
  for (const ScheduleInfo& e : Schedules().entries()) {
    schedules.items.push_back(
        {std::string(e.name), std::string(e.summary), "", OptionsRead(e.name, [&](OptionTable& t) {
           e.make(t, {100, 2});
         })});
  }
  Section& probes = sections.emplace_back(Section{"probes", "probes (probes = [...])", {}});
  for (const ProbeInfo& e : Probes().entries()) {
    probes.items.push_back({std::string(e.name), std::string(e.summary), "", {}});
  }
  Section& assertions = sections.emplace_back(
      Section{"assertions", "assertions ([[assert]] assertion, lemmalab check)", {}});
  for (const AssertionInfo& e : Assertions().entries()) {
    Item item{std::string(e.name), std::string(e.summary), std::string(e.source),
              OptionsRead(e.name, [&](OptionTable& t) { e.make(t, AssertionContext{}); })};
    if (!e.probes.empty()) {
      std::vector<std::string> names(e.probes.begin(), e.probes.end());
      item.summary += fmt::format(" (reads probes: {})", JoinNames(names));
    }
    assertions.items.push_back(std::move(item));
  }
  Section& schemes =
      sections.emplace_back(Section{"schemes", "schemes ([communication] scheme)", {}});
  for (const SchemeInfo& e : Schemes()) {
    schemes.items.push_back({std::string(e.name), std::string(e.summary), "", {}});
  }
  Section& networks =
      sections.emplace_back(Section{"networks", "networks ([network] intra, inter)", {}});
  for (const NetworkPreset& e : NetworkPresets()) {
    const double gbit = e.cost.bandwidth_bytes_per_s * 8e-9, us = e.cost.latency_s * 1e6;
    networks.items.push_back({std::string(e.name),
                              fmt::format("{:.4g} Gbit/s, {:g} us latency", gbit, us),
                              std::string(e.source),
                              {}});
  }
  Section& metrics =
      sections.emplace_back(Section{"metrics", "metrics (what every run records)", {}});
  for (const MetricInfo& e : kMetrics) {
    metrics.items.push_back(
        {std::string(e.name),
         fmt::format("{} ({})", e.meaning, e.evaluated ? "eval_every" : "metrics_every"),
         "",
         {}});
  }
  sections.push_back(DevicesSection());
  return sections;
}

}  // namespace

std::vector<std::string> ListKinds() {
  return {"optimizers", "compressors", "problems", "data",    "schedules", "probes",
          "assertions", "schemes",     "networks", "metrics", "devices"};
}

std::string ListRegistries(bool json, std::string_view kind, std::string_view name) {
  const std::vector<std::string> kinds = ListKinds();
  if (!kind.empty() && std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
    throw UserError(UnknownName("kind", std::string(kind), kinds));
  }
  nlohmann::json doc = nlohmann::json::object();
  std::string text;
  for (Section& section : Sections()) {
    if (!kind.empty() && section.kind != kind) continue;
    if (!name.empty()) {
      std::vector<std::string> names;
      for (const Item& item : section.items) names.push_back(item.name);
      std::erase_if(section.items, [&](const Item& item) { return item.name != name; });
      if (section.items.empty()) {
        const std::string one = section.kind == "data"
                                    ? "data source"
                                    : section.kind.substr(0, section.kind.size() - 1);
        throw UserError(UnknownName(one, std::string(name), names));
      }
    }
    text += section.title + "\n";
    std::size_t width = 0;
    for (const Item& item : section.items) width = std::max(width, item.name.size());
    auto& items = doc[section.kind] = nlohmann::json::array();
    for (const Item& item : section.items) {
      text += fmt::format("  {:<{}}  {}\n", item.name, width, item.summary);
      if (!item.source.empty()) text += fmt::format("      source: {}\n", item.source);
      nlohmann::json options = nlohmann::json::array();
      for (const OptionTable::Use& use : item.options) {
        text += fmt::format("      {} = {}\n", use.key, use.description);
        options.push_back({{"key", use.key}, {"description", use.description}});
      }
      nlohmann::json entry = {{"name", item.name}, {"summary", item.summary}};
      if (!item.source.empty()) entry["source"] = item.source;
      if (!item.options.empty()) entry["options"] = std::move(options);
      items.push_back(std::move(entry));
    }
  }
  return json ? doc.dump(2) + "\n" : text;
}

}  // namespace lemmalab
