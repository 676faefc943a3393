#include "cli/spec.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/text.h"
#include "theory/probe.h"

namespace lemmalab {
namespace {

std::string Where(const std::string& file, const toml::source_region& region) {
  return fmt::format("{}:{}:{}", file, region.begin.line, region.begin.column);
}

OptionValue Convert(const toml::node& node, const std::string& file, const std::string& context);

std::shared_ptr<OptionTable> ConvertTable(const toml::table& table, const std::string& file,
                                          const std::string& context) {
  auto out = std::make_shared<OptionTable>(context, Where(file, table.source()));
  for (const auto& [key, value] : table) {
    // Messages point at the key: "spec.toml:12:1" is the line that sets it.
    OptionValue converted = Convert(value, file, context);
    converted.where = Where(file, key.source());
    out->Set(std::string(key.str()), std::move(converted));
  }
  return out;
}

OptionValue Convert(const toml::node& node, const std::string& file, const std::string& context) {
  const std::string where = Where(file, node.source());
  if (const auto* v = node.as_boolean()) return {v->get(), where};
  if (const auto* v = node.as_integer()) return {v->get(), where};
  if (const auto* v = node.as_floating_point()) return {v->get(), where};
  if (const auto* v = node.as_string()) return {v->get(), where};
  if (const auto* v = node.as_table()) return {ConvertTable(*v, file, context), where};
  if (const auto* v = node.as_array()) {
    OptionValue::Array items;
    for (const toml::node& item : *v) items.push_back(Convert(item, file, context));
    return {std::move(items), where};
  }
  throw UserError(fmt::format("{}: {}: dates and times are not supported here", where, context));
}

// Locates a value (and everything inside it) at `where`: a --set value's messages name the flag.
void SetWhere(OptionValue& value, const std::string& where) {
  value.where = where;
  if (auto* items = std::get_if<OptionValue::Array>(&value.data)) {
    for (OptionValue& item : *items) SetWhere(item, where);
  }
}

bool IsValidLabel(const std::string& label) {
  if (label.empty() || !std::isalnum(static_cast<unsigned char>(label[0]))) return false;
  for (const char c : label) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.' &&
        c != '+') {
      return false;
    }
  }
  return true;
}

}  // namespace

std::shared_ptr<OptionTable> ParseOptionTable(const std::string& text, const std::string& context,
                                              const std::string& file) {
  toml::table document;
  try {
    document = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    throw UserError(fmt::format("{}: {}", Where(file, e.source()), e.description()));
  }
  return ConvertTable(document, file, context);
}

std::shared_ptr<OptionTable> ParseSpecTable(const std::string& text,
                                            const std::filesystem::path& path) {
  const std::string file = path.string();
  toml::table document;
  try {
    document = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    throw UserError(fmt::format("{}: invalid TOML: {}", Where(file, e.source()), e.description()));
  }
  return ConvertTable(document, file, "run spec");
}

RunSpec ParseSpec(const std::string& text, const std::filesystem::path& path,
                  const std::vector<std::string>& settings) {
  return SpecFromTable(ApplySettings(ParseSpecTable(text, path), settings), path, text);
}

RunSpec SpecFromTable(std::shared_ptr<OptionTable> root, const std::filesystem::path& path,
                      std::string text) {
  RunSpec spec;
  spec.path = path;
  spec.text = std::move(text);
  spec.description = root->GetString("description", "");
  spec.seed = static_cast<std::uint64_t>(root->RequireInt("seed", 0));
  spec.steps = root->RequireInt("steps", 1, 0xFFFFFFFFll);
  spec.workers = static_cast<int>(root->GetInt("workers", 1, 1, 1 << 20));
  static const std::vector<std::string> kPrecisions = {"fp32", "fp64"};
  spec.precision = root->GetChoice("precision", "fp32", kPrecisions) == "fp64" ? Precision::kFp64
                                                                               : Precision::kFp32;
  spec.eval_every = root->GetInt("eval_every", 1, 1);
  spec.metrics_every = root->GetOptionalInt("metrics_every", 1).value_or(0);
  spec.probe_every = root->GetOptionalInt("probe_every", 1).value_or(0);
  spec.reference = root->GetBool("reference", false);
  spec.reference_iterations =
      static_cast<int>(root->GetInt("reference_iterations", spec.reference_iterations, 1, 1 << 30));

  spec.probes = root->GetStringList("probes");
  for (std::size_t k = 0; k < spec.probes.size(); ++k) {
    const std::string& probe = spec.probes[k];
    if (Probes().Find(probe) == nullptr) {
      root->Fail("probes", UnknownName("probe", probe, Probes().names()));
    }
    if (std::find(spec.probes.begin(), spec.probes.begin() + k, probe) != spec.probes.begin() + k) {
      root->Fail("probes", fmt::format("probe '{}' is listed twice", probe));
    }
  }

  spec.data = root->GetTable("data");
  if (spec.data) spec.data->set_context("[data]");
  spec.problem = root->GetTable("problem");
  if (!spec.problem) root->Fail("problem", "missing the [problem] table");
  spec.problem->set_context("[problem]");
  if (std::shared_ptr<OptionTable> comm = root->GetTable("communication")) {
    comm->set_context("[communication]");
    spec.comm = CommFromOptions(comm.get(), spec.workers);
    comm->RejectUnknownKeys();
  } else {
    spec.comm = CommFromOptions(nullptr, spec.workers);
  }
  spec.network = root->GetTable("network");
  if (spec.network) spec.network->set_context("[network]");
  spec.sweep = root->GetTable("sweep");
  if (spec.sweep) spec.sweep->set_context("[sweep]");
  spec.check = root->GetTable("check");
  if (spec.check) spec.check->set_context("[check]");
  spec.asserts = root->GetTableArray("assert");
  for (std::size_t k = 0; k < spec.asserts.size(); ++k) {
    spec.asserts[k]->set_context(fmt::format("[[assert]] #{}", k + 1));
  }
  std::shared_ptr<OptionTable> schedule = root->GetTable("schedule");
  if (schedule) schedule->set_context("[schedule]");

  const auto optimizers = root->GetTableArray("optimizer");
  if (optimizers.empty()) root->Fail("optimizer", "no [[optimizer]] table: nothing to run");
  for (const auto& table : optimizers) {
    OptimizerSpec o;
    o.options = table;
    table->set_context(fmt::format("[[optimizer]] #{}", spec.optimizers.size() + 1));
    const std::string name = table->RequireString("name");
    o.label = table->GetString("label", name);
    table->set_context(fmt::format("optimizer '{}'", o.label));
    if (!IsValidLabel(o.label)) {
      table->Fail("label", fmt::format("label '{}' may hold only letters, digits and _ - . + "
                                       "(it names the run in results and plots)",
                                       o.label));
    }
    for (const OptimizerSpec& earlier : spec.optimizers) {
      if (earlier.label == o.label) {
        table->Fail("label", fmt::format("two optimizers are labelled '{}': give each a "
                                         "distinct label = \"...\"",
                                         o.label));
      }
    }
    o.schedule = table->GetTable("schedule");
    if (o.schedule) {
      o.schedule->set_context(fmt::format("optimizer '{}': schedule", o.label));
    } else if (schedule) {
      o.schedule = schedule;
    } else {
      table->Fail("name", fmt::format("optimizer '{}' has no learning rate: add a [schedule] "
                                      "table or a schedule = {{ lr = ... }} key",
                                      o.label));
    }
    spec.optimizers.push_back(std::move(o));
  }
  root->RejectUnknownKeys();
  return spec;
}

std::string ReadSpecText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw UserError(
        fmt::format("{}: cannot read the run spec: {}", path.string(),
                    std::filesystem::exists(path) ? "permission denied" : "no such file"));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> SplitPath(std::string_view path) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t dot; (dot = path.find('.', start)) != std::string_view::npos; start = dot + 1) {
    parts.emplace_back(path.substr(start, dot - start));
  }
  parts.emplace_back(path.substr(start));
  return parts;
}

namespace {

// Sets `value` at `parts` below `table`, making tables on the way; a component given by name
// becomes a table with that name.
void SetAt(OptionTable& table, std::span<const std::string> parts, const OptionValue& value,
           std::string_view path) {
  const std::string& key = parts.front();
  if (key.empty()) {
    throw UserError(fmt::format("{}: {} is not an option path (parts are separated by single dots)",
                                value.where, path));
  }
  if (parts.size() == 1) {
    table.Set(key, value.Clone());
    return;
  }
  std::shared_ptr<OptionTable> child;
  std::string where = value.where;
  const auto it = table.entries().find(key);
  if (it == table.entries().end()) {
    child = std::make_shared<OptionTable>(table.context(), value.where);
  } else if (const auto* t = std::get_if<OptionValue::Table>(&it->second.data)) {
    child = *t;
    where = it->second.where;
  } else if (std::holds_alternative<std::string>(it->second.data)) {
    child = std::make_shared<OptionTable>(table.context(), it->second.where);
    child->Set("name", it->second);
    where = it->second.where;
  } else {
    throw UserError(fmt::format("{}: {}: {} is {} {} in the spec, not a table", value.where, path,
                                key, it->second.TypeName(), it->second.Show()));
  }
  table.Set(key, {child, where});
  SetAt(*child, parts.subspan(1), value, path);
}

}  // namespace

std::optional<OptimizerOption> ResolveOptimizerPath(std::string_view path,
                                                    const std::vector<std::string>& labels) {
  const std::vector<std::string> parts = SplitPath(path);
  if (parts.front() != "optimizer" || parts.size() == 1) return std::nullopt;
  OptimizerOption out;
  std::size_t first = 1;
  if (parts.size() > 2 && std::find(labels.begin(), labels.end(), parts[1]) != labels.end()) {
    out.label = parts[1];
    first = 2;
  }
  for (std::size_t i = first; i < parts.size(); ++i) {
    out.key += (i > first ? "." : "") + parts[i];
  }
  return out;
}

void SetSpecOption(OptionTable& root, std::string_view path, const OptionValue& value) {
  // The [[optimizer]] tables and their labels (a label defaults to the name).
  std::vector<std::shared_ptr<OptionTable>> optimizers;
  if (const auto it = root.entries().find("optimizer"); it != root.entries().end()) {
    if (const auto* t = std::get_if<OptionValue::Table>(&it->second.data)) {
      optimizers.push_back(*t);
    } else if (const auto* items = std::get_if<OptionValue::Array>(&it->second.data)) {
      for (const OptionValue& item : *items) {
        if (const auto* table = std::get_if<OptionValue::Table>(&item.data)) {
          optimizers.push_back(*table);
        }
      }
    }
  }
  const auto label_of = [](const OptionTable& o) {
    for (const char* key : {"label", "name"}) {
      const auto it = o.entries().find(key);
      if (it == o.entries().end()) continue;
      if (const auto* s = std::get_if<std::string>(&it->second.data)) return *s;
    }
    return std::string();
  };
  std::vector<std::string> labels;
  for (const auto& o : optimizers) labels.push_back(label_of(*o));
  const std::optional<OptimizerOption> option = ResolveOptimizerPath(path, labels);
  if (!option) {
    SetAt(root, SplitPath(path), value, path);
    return;
  }
  if (optimizers.empty()) {
    throw UserError(fmt::format("{}: {}: the spec has no [[optimizer]] table", value.where, path));
  }
  const std::vector<std::string> key = SplitPath(option->key);
  for (std::size_t i = 0; i < optimizers.size(); ++i) {
    if (!option->label || labels[i] == *option->label) SetAt(*optimizers[i], key, value, path);
  }
}

std::pair<std::string, OptionValue> ParseSetting(std::string_view assignment) {
  const std::size_t equals = assignment.find('=');
  const std::string where = fmt::format("--set {}", assignment);
  if (equals == std::string_view::npos || equals == 0) {
    throw UserError(
        fmt::format("{}: expected PATH=VALUE, e.g. --set steps=10 or --set "
                    "optimizer.compressor=sign",
                    where));
  }
  const std::string path(assignment.substr(0, equals));
  const std::string text(assignment.substr(equals + 1));
  // The value as TOML (10, 0.9, true, "sign", [1, 2], { name = "top-k", k = 5 }); a bare word
  // that is not TOML is a string (--set optimizer.compressor=sign).
  OptionValue value{text, where};
  try {
    const auto table = ParseOptionTable("value = " + text, "--set", where);
    value = table->entries().at("value");
  } catch (const UserError&) {
    const bool word = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    });
    if (!word) {
      throw UserError(
          fmt::format("{}: the value {} is not TOML (a number, true/false, a string "
                      "in quotes, an array or an inline table)",
                      where, text));
    }
  }
  SetWhere(value, where);
  return {path, std::move(value)};
}

std::shared_ptr<OptionTable> ApplySettings(std::shared_ptr<OptionTable> root,
                                           const std::vector<std::string>& settings) {
  for (const std::string& setting : settings) {
    const auto [path, value] = ParseSetting(setting);
    SetSpecOption(*root, path, value);
  }
  return root;
}

RunSpec LoadSpec(const std::filesystem::path& path, const std::vector<std::string>& settings) {
  return ParseSpec(ReadSpecText(path), path, settings);
}

}  // namespace lemmalab
