#include "engine/spec.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pthread.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "core/text.h"
#include "problems/problem.h"
#include "theory/probe.h"

namespace lemmalab {
namespace {

std::string Where(const std::string& file, const toml::source_region& region) {
  return fmt::format("{}:{}:{}", file, region.begin.line, region.begin.column);
}

// How deep tables and arrays may nest in a spec: far more than any spec needs (its deepest
// option, a component table inside a list, is 4 deep), and few enough that converting them,
// one stack frame per level, cannot exhaust the stack (a hostile `a.a.a...` key 14 000 deep
// did).
constexpr std::size_t kMaxNesting = 64;

OptionValue Convert(const toml::node& node, const std::string& file, const std::string& context,
                    std::size_t depth);

// The document being converted, for the literal text of a number (see RequireRepresentable).
thread_local std::string_view g_document;

// The text of a one-line node as written in the document.
std::string_view Literal(const toml::source_region& region) {
  std::string_view rest = g_document;
  for (auto line = region.begin.line; line > 1 && !rest.empty(); --line) {
    const std::size_t newline = rest.find('\n');
    rest = newline == std::string_view::npos ? std::string_view() : rest.substr(newline + 1);
  }
  if (region.end.line != region.begin.line || region.begin.column < 1) return {};
  const std::size_t from = region.begin.column - 1;
  if (from >= rest.size() || region.end.column <= region.begin.column) return {};
  return rest.substr(from, region.end.column - region.begin.column);
}

// A number written with a value a double cannot hold is refused, not read as 0 or infinity:
// 1e-400 read as 0 was reported as "must be > 0, got 0".
void RequireRepresentable(double value, const toml::source_region& region, const std::string& where,
                          const std::string& context) {
  if (value != 0 && !std::isinf(value)) return;
  const std::string_view literal = Literal(region);
  const std::string_view mantissa = literal.substr(0, literal.find_first_of("eE"));
  const bool zero_written = mantissa.find_first_of("123456789") == std::string_view::npos;
  const bool inf_written = literal.find("inf") != std::string_view::npos;
  if (literal.empty() || (value == 0 && zero_written) || (std::isinf(value) && inf_written)) {
    return;
  }
  throw UserError(fmt::format("{}: {}: the number {} is {} for a double (it would be read as {})",
                              where, context, literal, value == 0 ? "too small" : "too large",
                              value));
}

// A key or string value with a control character (a NUL, an escape sequence; in a key also a
// newline) is refused: it would cut or rewrite every message and file name that shows it.
// Where the first control character of `text` is (a newline or tab counts only without
// `lines_allowed`).
std::optional<std::size_t> FirstControlCharacter(std::string_view text, bool lines_allowed) {
  for (std::size_t k = 0; k < text.size(); ++k) {
    const auto byte = static_cast<unsigned char>(text[k]);
    const bool line = text[k] == '\n' || text[k] == '\t';
    if ((byte < 0x20 && !(lines_allowed && line)) || byte == 0x7f) return k;
  }
  return std::nullopt;
}

void RequirePrintable(std::string_view text, const std::string& where, const std::string& context,
                      std::string_view what, bool lines_allowed) {
  if (const std::optional<std::size_t> k = FirstControlCharacter(text, lines_allowed)) {
    throw UserError(fmt::format(
        "{}: {}: the {} '{}' holds the control character \\x{:02x}; {}s hold printable text only",
        where, context, what, Printable(text), static_cast<unsigned char>(text[*k]), what));
  }
}

std::shared_ptr<OptionTable> ConvertTable(const toml::table& table, const std::string& file,
                                          const std::string& context, std::size_t depth = 0) {
  auto out = std::make_shared<OptionTable>(context, Where(file, table.source()));
  for (const auto& [key, value] : table) {
    // Messages point at the key: "spec.toml:12:1" is the line that sets it.
    RequirePrintable(key.str(), Where(file, key.source()), context, "key", false);
    OptionValue converted = Convert(value, file, context, depth + 1);
    converted.where = Where(file, key.source());
    out->Set(std::string(key.str()), std::move(converted));
  }
  return out;
}

OptionValue Convert(const toml::node& node, const std::string& file, const std::string& context,
                    std::size_t depth) {
  const std::string where = Where(file, node.source());
  if ((node.is_table() || node.is_array()) && depth > kMaxNesting) {
    throw UserError(
        fmt::format("{}: {}: tables and arrays nest more than {} deep here; a spec "
                    "needs a few levels at most",
                    where, context, kMaxNesting));
  }
  if (const auto* v = node.as_boolean()) return {v->get(), where};
  if (const auto* v = node.as_integer()) return {v->get(), where};
  if (const auto* v = node.as_floating_point()) {
    RequireRepresentable(v->get(), node.source(), where, context);
    return {v->get(), where};
  }
  if (const auto* v = node.as_string()) {
    RequirePrintable(v->get(), where, context, "string", true);
    return {v->get(), where};
  }
  if (const auto* v = node.as_table()) return {ConvertTable(*v, file, context, depth), where};
  if (const auto* v = node.as_array()) {
    OptionValue::Array items;
    for (const toml::node& item : *v) items.push_back(Convert(item, file, context, depth + 1));
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

// Runs f() on a thread with a stack of kParserStackBytes and returns its result (or rethrows).
// toml++ parses and destroys nested tables recursively, one stack frame of about 270 bytes per
// level of a dotted key or table header, so `a.a.a...` 40 000 parts deep overflowed the main
// thread's 8 MiB. A spec is at most kMaxSpecBytes, which bounds the depth at kMaxSpecBytes / 2
// levels: 36 MiB of frames at most. The stack is reserved, and only what is used is touched.
constexpr std::size_t kParserStackBytes = std::size_t{256} << 20;
static_assert(kParserStackBytes > 300 * (kMaxSpecBytes / 2),
              "the stack must hold the deepest spec");

template <typename F>
auto OnParserStack(F&& f) -> decltype(f()) {
  std::optional<decltype(f())> result;
  std::exception_ptr error;
  std::function<void()> body = [&] {
    try {
      result.emplace(f());
    } catch (...) {
      error = std::current_exception();
    }
  };
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstacksize(&attributes, kParserStackBytes);
  pthread_t thread;
  const auto run = [](void* arg) -> void* {
    (*static_cast<std::function<void()>*>(arg))();
    return nullptr;
  };
  const int created = pthread_create(&thread, &attributes, +run, &body);
  pthread_attr_destroy(&attributes);
  if (created != 0) {
    throw UserError(
        fmt::format("cannot start the spec parser's thread: {}", std::strerror(created)));
  }
  pthread_join(thread, nullptr);
  if (error) std::rethrow_exception(error);
  return std::move(*result);
}

// Parses TOML text into an option table. The document is parsed, converted and destroyed on the
// parser's stack; what comes back nests at most kMaxNesting deep.
std::shared_ptr<OptionTable> ParseToml(const std::string& text, const std::string& file,
                                       const std::string& context, std::string_view error_prefix) {
  return OnParserStack([&] {
    toml::table document;
    g_document = text;
    try {
      document = toml::parse(text, file);
    } catch (const toml::parse_error& e) {
      throw UserError(
          fmt::format("{}: {}{}", Where(file, e.source()), error_prefix, e.description()));
    }
    return ConvertTable(document, file, context);
  });
}

}  // namespace

std::shared_ptr<OptionTable> ParseOptionTable(const std::string& text, const std::string& context,
                                              const std::string& file) {
  return ParseToml(text, file, context, "");
}

std::shared_ptr<OptionTable> ParseSpecTable(const std::string& text,
                                            const std::filesystem::path& path) {
  return ParseToml(text, path.string(), "run spec", "invalid TOML: ");
}

RunSpec ParseSpec(const std::string& text, const std::filesystem::path& path,
                  const std::vector<std::string>& settings) {
  RunSpec spec = SpecFromTable(ApplySettings(ParseSpecTable(text, path), settings), path, text);
  spec.settings = settings;
  return spec;
}

std::shared_ptr<OptionTable> OptimizerSpec::AlgorithmOptions() const {
  std::shared_ptr<OptionTable> table = options->Clone();
  table->Erase("label");
  table->Erase("schedule");
  return table;
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
  spec.device = DeviceNamed(root->GetChoice("device", "cpu", DeviceNames()));
  spec.eval_every = root->GetInt("eval_every", 1, 1);
  spec.metrics_every = root->GetOptionalInt("metrics_every", 1).value_or(0);
  spec.probe_every = root->GetOptionalInt("probe_every", 1).value_or(0);
  spec.checkpoint_every = root->GetOptionalInt("checkpoint_every", 1).value_or(0);
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
  // Every top-level key has been asked for: a misspelt one is named now, not by a check below of
  // what it left missing ("add a [data] table" for [dtaa]).
  root->RejectUnknownKeys();

  // Whether the problem reads data, settled before anything is loaded.
  if (const ProblemInfo* problem = Problems().Find(spec.problem->GetString("name", ""))) {
    // Located at the [data] table when there is one, else at the problem's name.
    if (const std::string why = DataMismatch(*problem, spec.data != nullptr); !why.empty()) {
      if (spec.data) root->Fail("data", why);
      spec.problem->Fail("name", why);
    }
  }
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
  return spec;
}

std::string ReadSpecText(const std::filesystem::path& path) {
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored)) {
    throw UserError(fmt::format("{}: is a folder; give the run spec's .toml file", path.string()));
  }
  // Opened without blocking: a FIFO nobody writes to would otherwise hang the open. Reads then
  // block as usual, and a FIFO without a writer reads as empty.
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    throw UserError(
        fmt::format("{}: cannot read the run spec: {}", path.string(), std::strerror(errno)));
  }
  const int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  // Read one byte past the limit, so that an endless input (/dev/zero) stops there.
  std::string text(kMaxSpecBytes + 1, '\0');
  std::size_t size = 0;
  while (size < text.size()) {
    const ssize_t n = read(fd, text.data() + size, text.size() - size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      close(fd);
      throw UserError(
          fmt::format("{}: cannot read the run spec: {}", path.string(), std::strerror(error)));
    }
    if (n == 0) break;
    size += static_cast<std::size_t>(n);
  }
  close(fd);
  text.resize(size);
  if (text.size() > kMaxSpecBytes) {
    throw UserError(fmt::format("{}: a run spec is at most {} KiB of text; this one is larger",
                                path.string(), kMaxSpecBytes >> 10));
  }
  return text;
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
  if (const std::size_t parts = SplitPath(path).size(); parts > kMaxNesting) {
    throw UserError(fmt::format("{}: the option path has {} parts; a spec nests {} deep at most",
                                value.where, parts, kMaxNesting));
  }
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
  // A message names the flag with its text, cut short when it is long.
  constexpr std::size_t kShown = 80;
  const std::string where = assignment.size() <= kShown
                                ? fmt::format("--set {}", assignment)
                                : fmt::format("--set {}... ({} characters)",
                                              assignment.substr(0, kShown), assignment.size());
  if (equals == std::string_view::npos || equals == 0) {
    throw UserError(
        fmt::format("{}: expected PATH=VALUE, e.g. --set steps=10 or --set "
                    "optimizer.compressor=sign",
                    where));
  }
  // A newline would make the value two TOML lines, the second silently dropped.
  if (const std::optional<std::size_t> k = FirstControlCharacter(assignment, false)) {
    throw UserError(fmt::format(
        "--set {}...: holds the control character \\x{:02x}; each --set is one PATH=VALUE on one "
        "line (give --set again for another)",
        assignment.substr(0, std::min<std::size_t>(*k, kShown)),
        static_cast<unsigned char>(assignment[*k])));
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

std::string ShowValue(const OptionValue& value) {
  if (const auto* s = std::get_if<std::string>(&value.data)) return *s;
  if (const auto* array = std::get_if<OptionValue::Array>(&value.data)) {
    std::vector<std::string> items;
    for (const OptionValue& item : *array) items.push_back(ShowValue(item));
    return fmt::format("[{}]", fmt::join(items, ","));
  }
  if (const auto* table = std::get_if<OptionValue::Table>(&value.data)) {
    // A component by its name, then its other options: top-k(fraction=0.1).
    std::string name;
    std::vector<std::string> options;
    for (const auto& [key, item] : (*table)->entries()) {
      if (key == "name") {
        name = ShowValue(item);
      } else {
        options.push_back(fmt::format("{}={}", key, ShowValue(item)));
      }
    }
    if (options.empty()) return name.empty() ? "{}" : name;
    return fmt::format("{}({})", name, fmt::join(options, ","));
  }
  return value.Show();
}

namespace {

// Every setting of a table as "path" -> its value in one line, arrays of tables by index
// (optimizer[1].beta).
void Flatten(const OptionTable& table, const std::string& prefix,
             std::map<std::string, std::string>& out) {
  for (const auto& [key, value] : table.entries()) {
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (const auto* inner = std::get_if<OptionValue::Table>(&value.data)) {
      Flatten(**inner, path, out);
      continue;
    }
    const auto* array = std::get_if<OptionValue::Array>(&value.data);
    const bool tables = array != nullptr && !array->empty() &&
                        std::all_of(array->begin(), array->end(), [](const OptionValue& v) {
                          return std::holds_alternative<OptionValue::Table>(v.data);
                        });
    if (tables) {
      for (std::size_t i = 0; i < array->size(); ++i) {
        Flatten(*std::get<OptionValue::Table>((*array)[i].data), fmt::format("{}[{}]", path, i),
                out);
      }
    } else {
      out[path] = ShowValue(value);
    }
  }
}

}  // namespace

std::vector<std::string> SpecDifferences(const std::string& then, const std::string& now,
                                         bool outside_sweep) {
  std::map<std::string, std::string> before, after;
  try {
    Flatten(*ParseToml(then, "then", "spec", ""), "", before);
    Flatten(*ParseToml(now, "now", "spec", ""), "", after);
  } catch (const UserError&) {
    return {};
  }
  std::vector<std::string> differences;
  const auto note = [&](const std::string& path, const std::string* a, const std::string* b) {
    if (outside_sweep && (path == "sweep" || path.starts_with("sweep."))) return;
    differences.push_back(
        fmt::format("{}: {} then, {} now", path, a ? *a : "(absent)", b ? *b : "(absent)"));
  };
  for (const auto& [path, value] : before) {
    const auto it = after.find(path);
    if (it == after.end()) {
      note(path, &value, nullptr);
    } else if (it->second != value) {
      note(path, &value, &it->second);
    }
  }
  for (const auto& [path, value] : after) {
    if (!before.contains(path)) note(path, nullptr, &value);
  }
  std::sort(differences.begin(), differences.end());
  return differences;
}

std::string ListDifferences(const std::vector<std::string>& differences) {
  constexpr std::size_t kShown = 5;
  std::string text;
  for (std::size_t i = 0; i < differences.size() && i < kShown; ++i) {
    text += (i == 0 ? "" : "; ") + differences[i];
  }
  if (differences.size() > kShown)
    text += fmt::format("; and {} more", differences.size() - kShown);
  return text;
}

}  // namespace lemmalab
