#include "core/options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/text.h"

namespace lemmalab {

std::string OptionValue::TypeName() const {
  switch (data.index()) {
    case 0:
      return "a boolean";
    case 1:
      return "an integer";
    case 2:
      return "a number";
    case 3:
      return "a string";
    case 4:
      return "an array";
    default:
      return "a table";
  }
}

std::string OptionValue::Show() const {
  if (const auto* b = std::get_if<bool>(&data)) return *b ? "true" : "false";
  if (const auto* i = std::get_if<std::int64_t>(&data)) return fmt::format("{}", *i);
  if (const auto* d = std::get_if<double>(&data)) return fmt::format("{}", *d);
  if (const auto* s = std::get_if<std::string>(&data)) return fmt::format("'{}'", *s);
  if (std::holds_alternative<Array>(data)) return "[...]";
  return "{...}";
}

bool Interval::Contains(double x) const {
  if (!std::isfinite(x)) return false;  // no option is meaningful at infinity
  const bool above = lo_open ? x > lo : x >= lo;
  const bool below = hi_open ? x < hi : x <= hi;
  return above && below;
}

std::string Interval::ToString() const {
  const bool lo_inf = std::isinf(lo), hi_inf = std::isinf(hi);
  if (lo_inf && hi_inf) return "finite";
  if (hi_inf) return fmt::format("{} {}", lo_open ? ">" : ">=", lo);
  if (lo_inf) return fmt::format("{} {}", hi_open ? "<" : "<=", hi);
  return fmt::format("in {}{}, {}{}", lo_open ? "(" : "[", lo, hi, hi_open ? ")" : "]");
}

OptionTable::OptionTable(std::string context, std::string where)
    : context_(std::move(context)), where_(std::move(where)) {}

void OptionTable::Set(std::string key, OptionValue value) {
  values_.insert_or_assign(std::move(key), std::move(value));
}

void OptionTable::Erase(std::string_view key) {
  if (const auto it = values_.find(key); it != values_.end()) values_.erase(it);
}

OptionValue OptionValue::Clone() const {
  if (const auto* table = std::get_if<Table>(&data)) return {(*table)->Clone(), where};
  if (const auto* array = std::get_if<Array>(&data)) {
    Array items;
    for (const OptionValue& item : *array) items.push_back(item.Clone());
    return {std::move(items), where};
  }
  return *this;
}

std::shared_ptr<OptionTable> OptionTable::Clone() const {
  auto out = std::make_shared<OptionTable>(context_, where_);
  for (const auto& [key, value] : values_) out->Set(key, value.Clone());
  return out;
}

void OptionTable::Fail(std::string_view key, std::string_view message) const {
  std::string where = where_, hint;
  if (const auto it = values_.find(key); it != values_.end()) {
    if (!it->second.where.empty()) where = it->second.where;
  } else {
    // A key asked for and absent is often a key given misspelt, which no getter has read: say
    // so here, since the unknown-key check comes only after every required key.
    std::vector<std::string> unread;
    for (const auto& [given, value] : values_) {
      if (!known_.contains(given)) unread.push_back(given);
    }
    if (const auto misspelt = ClosestMatch(key, unread)) {
      hint = fmt::format(" ('{}' is not a key here: did you mean '{}'?)", *misspelt, key);
      const std::string& at = values_.at(*misspelt).where;
      if (!at.empty()) where = at;
    }
  }
  throw OptionError(where.empty() ? fmt::format("{}: {}{}", context_, message, hint)
                                  : fmt::format("{}: {}: {}{}", where, context_, message, hint));
}

const OptionValue* OptionTable::Lookup(std::string_view key) {
  known_.emplace(key);
  const auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

template <typename V>
const V& OptionTable::Expect(std::string_view key, const OptionValue& value,
                             std::string_view what) const {
  const V* v = std::get_if<V>(&value.data);
  if (v == nullptr) {
    Fail(key, fmt::format("{} must be {}, got {} {}", key, what, value.TypeName(), value.Show()));
  }
  return *v;
}

void OptionTable::Note(std::string_view key, std::string description) {
  for (Use& use : uses_) {
    if (use.key == key) {
      use.description = std::move(description);
      return;
    }
  }
  uses_.push_back({std::string(key), std::move(description)});
}

void OptionTable::Resolve(std::string_view key, Hyperparameters::Value value) {
  resolved_.insert_or_assign(std::string(key), std::move(value));
}

Hyperparameters OptionTable::Resolved() const {
  Hyperparameters out;
  for (const auto& [key, value] : resolved_) out.Set(key, value);
  for (const auto& [key, child] : children_) out.Merge(key, child->Resolved());
  return out;
}

namespace {

std::string IntRule(std::int64_t min, std::int64_t max) {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
  if (min == kMin && max == kMax) return "any";
  if (max == kMax) return fmt::format(">= {}", min);
  if (min == kMin) return fmt::format("<= {}", max);
  return fmt::format("in [{}, {}]", min, max);
}

std::string NumberUse(const Interval& rule) {
  return rule.lo == Interval::Any().lo && rule.hi == Interval::Any().hi
             ? "a number"
             : fmt::format("a number {}", rule.ToString());
}

std::string IntUse(std::int64_t min, std::int64_t max) {
  const std::string rule = IntRule(min, max);
  return rule == "any" ? "an integer" : fmt::format("an integer {}", rule);
}

}  // namespace

bool OptionTable::Has(std::string_view key) {
  const bool present = Lookup(key) != nullptr;
  if (std::none_of(uses_.begin(), uses_.end(), [&](const Use& u) { return u.key == key; })) {
    Note(key, "optional");
  }
  return present;
}

double OptionTable::GetDouble(std::string_view key, double fallback, const Interval& rule) {
  const double x = Has(key) ? RequireDouble(key, rule) : fallback;
  Note(key, fmt::format("{}; default {}", NumberUse(rule), fallback));
  Resolve(key, x);
  return x;
}

double OptionTable::RequireDouble(std::string_view key, const Interval& rule) {
  const OptionValue* value = Lookup(key);
  if (value == nullptr) {
    Note(key, fmt::format("{}; required", NumberUse(rule)));  // listed even when missing
    Fail(key, fmt::format("missing required key '{}'", key));
  }
  double x;
  if (const auto* i = std::get_if<std::int64_t>(&value->data)) {
    x = static_cast<double>(*i);
  } else {
    x = Expect<double>(key, *value, "a number");
  }
  if (!rule.Contains(x)) Fail(key, fmt::format("{} must be {}, got {}", key, rule.ToString(), x));
  Note(key, fmt::format("{}; required", NumberUse(rule)));
  Resolve(key, x);
  return x;
}

std::int64_t OptionTable::GetInt(std::string_view key, std::int64_t fallback, std::int64_t min,
                                 std::int64_t max) {
  const std::int64_t x = Has(key) ? RequireInt(key, min, max) : fallback;
  Note(key, fmt::format("{}; default {}", IntUse(min, max), fallback));
  Resolve(key, x);
  return x;
}

std::int64_t OptionTable::RequireInt(std::string_view key, std::int64_t min, std::int64_t max) {
  const OptionValue* value = Lookup(key);
  if (value == nullptr) {
    Note(key, fmt::format("{}; required", IntUse(min, max)));  // listed even when missing
    Fail(key, fmt::format("missing required key '{}'", key));
  }
  const std::int64_t x = Expect<std::int64_t>(key, *value, "an integer");
  if (x < min || x > max)
    Fail(key, fmt::format("{} must be {}, got {}", key, IntRule(min, max), x));
  Note(key, fmt::format("{}; required", IntUse(min, max)));
  Resolve(key, x);
  return x;
}

std::optional<double> OptionTable::GetOptionalDouble(std::string_view key, const Interval& rule) {
  if (!Has(key)) {
    Note(key, fmt::format("{}; optional", NumberUse(rule)));
    return std::nullopt;
  }
  const double x = RequireDouble(key, rule);
  Note(key, fmt::format("{}; optional", NumberUse(rule)));
  return x;
}

std::optional<std::int64_t> OptionTable::GetOptionalInt(std::string_view key, std::int64_t min,
                                                        std::int64_t max) {
  if (!Has(key)) {
    Note(key, fmt::format("{}; optional", IntUse(min, max)));
    return std::nullopt;
  }
  const std::int64_t x = RequireInt(key, min, max);
  Note(key, fmt::format("{}; optional", IntUse(min, max)));
  return x;
}

bool OptionTable::GetBool(std::string_view key, bool fallback) {
  const OptionValue* value = Lookup(key);
  Note(key, fmt::format("true or false; default {}", fallback));
  const bool b = value == nullptr ? fallback : Expect<bool>(key, *value, "true or false");
  Resolve(key, b);
  return b;
}

std::string OptionTable::GetString(std::string_view key, std::string_view fallback) {
  const OptionValue* value = Lookup(key);
  Note(key, fallback.empty() ? "a string" : fmt::format("a string; default '{}'", fallback));
  std::string s =
      value == nullptr ? std::string(fallback) : Expect<std::string>(key, *value, "a string");
  Resolve(key, s);
  return s;
}

std::string OptionTable::RequireString(std::string_view key) {
  if (!Has(key)) {
    Note(key, "a string; required");  // listed even when missing
    Fail(key, fmt::format("missing required key '{}'", key));
  }
  std::string s = GetString(key, "");
  Note(key, "a string; required");
  return s;
}

std::string OptionTable::GetChoice(std::string_view key, std::string_view fallback,
                                   std::span<const std::string> choices) {
  std::string s = GetString(key, fallback);
  Note(key, fmt::format("one of {}; default '{}'", JoinNames(choices), fallback));
  for (const std::string& c : choices) {
    if (c == s) return s;
  }
  Fail(key, fmt::format("{} must be one of {}; got '{}'{}", key, JoinNames(choices), s,
                        DidYouMean(s, choices)));
}

std::vector<std::string> OptionTable::GetStringList(std::string_view key) {
  const OptionValue* value = Lookup(key);
  Note(key, "an array of strings; default []");
  if (value == nullptr) return {};
  std::vector<std::string> out;
  for (const OptionValue& item : Expect<OptionValue::Array>(key, *value, "an array of strings")) {
    const auto* s = std::get_if<std::string>(&item.data);
    if (s == nullptr) {
      Fail(key, fmt::format("{} must be an array of strings, but holds {} {}", key, item.TypeName(),
                            item.Show()));
    }
    out.push_back(*s);
  }
  Resolve(key, fmt::format("[{}]", fmt::join(out, ", ")));
  return out;
}

std::vector<std::int64_t> OptionTable::GetIntList(std::string_view key,
                                                  std::vector<std::int64_t> fallback,
                                                  std::int64_t min, std::int64_t max) {
  const OptionValue* value = Lookup(key);
  Note(key, fmt::format("an array of integers {}; default [{}]", IntRule(min, max),
                        fmt::join(fallback, ", ")));
  if (value == nullptr) {
    Resolve(key, fmt::format("[{}]", fmt::join(fallback, ", ")));
    return fallback;
  }
  std::vector<std::int64_t> out;
  for (const OptionValue& item : Expect<OptionValue::Array>(key, *value, "an array of integers")) {
    const auto* n = std::get_if<std::int64_t>(&item.data);
    if (n == nullptr) {
      Fail(key, fmt::format("{} must be an array of integers, but holds {} {}", key,
                            item.TypeName(), item.Show()));
    }
    if (*n < min || *n > max) {
      Fail(key, fmt::format("every entry of {} must be in [{}, {}], got {}", key, min, max, *n));
    }
    out.push_back(*n);
  }
  Resolve(key, fmt::format("[{}]", fmt::join(out, ", ")));
  return out;
}

std::shared_ptr<OptionTable> OptionTable::GetTable(std::string_view key) {
  const OptionValue* value = Lookup(key);
  Note(key, "a table");
  if (value == nullptr) return nullptr;
  const OptionValue::Table& table = Expect<OptionValue::Table>(key, *value, "a table");
  children_.insert_or_assign(std::string(key), table);
  return table;
}

std::vector<std::shared_ptr<OptionTable>> OptionTable::GetTableArray(std::string_view key) {
  const OptionValue* value = Lookup(key);
  if (value == nullptr) return {};
  // A single table where an array of them is meant ([optimizer] for [[optimizer]]) is refused
  // rather than read as an array of one: the same spelling could be meant as either.
  if (std::holds_alternative<OptionValue::Table>(value->data)) {
    Fail(key, fmt::format("[{0}] is a single table, but {0} is an array of tables: write "
                          "[[{0}]] (with two brackets), once per entry",
                          key));
  }
  std::vector<std::shared_ptr<OptionTable>> out;
  for (const OptionValue& item : Expect<OptionValue::Array>(key, *value, "an array of tables")) {
    const auto* t = std::get_if<OptionValue::Table>(&item.data);
    if (t == nullptr) {
      Fail(key, fmt::format("{} must be an array of tables, but holds {} {}", key, item.TypeName(),
                            item.Show()));
    }
    out.push_back(*t);
  }
  return out;
}

std::shared_ptr<OptionTable> OptionTable::GetComponent(std::string_view key,
                                                       std::string_view fallback_name) {
  const OptionValue* value = Lookup(key);
  Note(key,
       fmt::format("a component (a name or a table with a name); default '{}'", fallback_name));
  const std::string context = fmt::format("{}: {}", context_, key);
  std::shared_ptr<OptionTable> table;
  if (value == nullptr) {
    table = std::make_shared<OptionTable>(context, where_);
    table->Set("name", {std::string(fallback_name), where_});
  } else if (std::holds_alternative<std::string>(value->data)) {
    table = std::make_shared<OptionTable>(context, value->where);
    table->Set("name", *value);
  } else {
    table = Expect<OptionValue::Table>(key, *value, "a name or a table with a name");
    table->set_context(context);
    if (!table->Has("name")) table->Fail("name", "missing required key 'name'");
  }
  children_.insert_or_assign(std::string(key), table);
  return table;
}

void OptionTable::RejectUnknownKeys() const {
  const std::vector<std::string> known(known_.begin(), known_.end());
  for (const auto& [key, value] : values_) {
    if (known_.contains(key)) continue;
    Fail(key, UnknownName("key", key, known));
  }
}

}  // namespace lemmalab
