// Options read from a run spec, with validation that names the option, its value and the rule.
//
// A component (problem, optimizer, compressor, schedule, ...) reads its options from an
// OptionTable through typed getters that carry their rule ("beta must be in [0, 1), got 1.2").
// Every getter records the key as known, so after a component has read what it understands,
// RejectUnknownKeys() reports anything left over as a typo and suggests the closest known key.
// The table knows nothing about TOML: engine/spec.cc converts the parsed file into tables and keeps
// each value's file:line:column for the messages.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/error.h"
#include "core/hyperparameters.h"

namespace lemmalab {

// An option that breaks its rule, found where the option is read: an unknown key, a value of the
// wrong type or out of range. Such errors do not depend on what the option is applied to (the
// data, the dimension), so lemmalab run reports them before it loads the data.
class OptionError : public UserError {
 public:
  using UserError::UserError;
};

class OptionTable;

struct OptionValue {
  using Array = std::vector<OptionValue>;
  using Table = std::shared_ptr<OptionTable>;
  std::variant<bool, std::int64_t, double, std::string, Array, Table> data;
  std::string where;  // "file:line:column" of the value; empty when not from a file

  std::string TypeName() const;  // "a number", "a string", ...
  std::string Show() const;      // the value as the user wrote it, for messages
  OptionValue Clone() const;     // a deep copy: tables inside are copied, not shared
};

// A numeric rule: an interval with open or closed ends (infinite ends allowed). Values must be
// finite whatever the interval: no option is meaningful at infinity or NaN.
struct Interval {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false;
  bool hi_open = false;

  static Interval Any() { return {}; }
  static Interval ClosedOpen(double lo, double hi) { return {lo, hi, false, true}; }
  static Interval Positive() { return {0.0, std::numeric_limits<double>::infinity(), true, false}; }
  static Interval NonNegative() { return {0.0, std::numeric_limits<double>::infinity()}; }

  bool Contains(double x) const;
  std::string ToString() const;  // "in [0, 1)", "> 0", ">= 0"
};

class OptionTable {
 public:
  // `context` names the table in messages ("optimizer 'birder'"); `where` locates it.
  OptionTable(std::string context, std::string where);

  void Set(std::string key, OptionValue value);
  void Erase(std::string_view key);
  // A deep copy of the values as given (nested tables copied too), with nothing read yet: a sweep
  // point edits its own copy of the spec (cli/sweep.h).
  std::shared_ptr<OptionTable> Clone() const;
  // The values as given, for tools that walk a table (sweep expansion); reading through entries()
  // does not mark a key as known.
  const std::map<std::string, OptionValue, std::less<>>& entries() const { return values_; }

  const std::string& context() const { return context_; }
  void set_context(std::string context) { context_ = std::move(context); }
  const std::string& where() const { return where_; }

  // Getters. Each records `key` as known; a missing key returns the fallback, and a Require*
  // getter fails with a message naming the key.
  bool Has(std::string_view key);
  double GetDouble(std::string_view key, double fallback, const Interval& rule = Interval::Any());
  double RequireDouble(std::string_view key, const Interval& rule = Interval::Any());
  std::int64_t GetInt(std::string_view key, std::int64_t fallback,
                      std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                      std::int64_t max = std::numeric_limits<std::int64_t>::max());
  std::int64_t RequireInt(std::string_view key,
                          std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                          std::int64_t max = std::numeric_limits<std::int64_t>::max());
  // The value of `key` when it is present (checked against the rule as above), nullopt when it
  // is not: an option whose absence means something other than any default.
  std::optional<double> GetOptionalDouble(std::string_view key,
                                          const Interval& rule = Interval::Any());
  std::optional<std::int64_t> GetOptionalInt(
      std::string_view key, std::int64_t min = std::numeric_limits<std::int64_t>::min(),
      std::int64_t max = std::numeric_limits<std::int64_t>::max());
  bool GetBool(std::string_view key, bool fallback);
  std::string GetString(std::string_view key, std::string_view fallback);
  std::string RequireString(std::string_view key);
  // A string that must be one of `choices`.
  std::string GetChoice(std::string_view key, std::string_view fallback,
                        std::span<const std::string> choices);
  std::vector<std::string> GetStringList(std::string_view key);
  // An array of integers, each in [min, max]; `fallback` when absent.
  std::vector<std::int64_t> GetIntList(std::string_view key, std::vector<std::int64_t> fallback,
                                       std::int64_t min, std::int64_t max);
  // A sub-table (nullptr when absent).
  std::shared_ptr<OptionTable> GetTable(std::string_view key);
  // An array of tables, as TOML's [[key]] (empty when absent); a single table ([key]) is an
  // error.
  std::vector<std::shared_ptr<OptionTable>> GetTableArray(std::string_view key);
  // A named component given either as a string (`compressor = "identity"`) or as a table with a
  // `name` key (`compressor = { name = "identity", ... }`). The result always has `name` set;
  // a missing key gives a table naming `fallback_name`.
  std::shared_ptr<OptionTable> GetComponent(std::string_view key, std::string_view fallback_name);

  // Fails on the first key no getter has asked for, suggesting the closest known key.
  void RejectUnknownKeys() const;

  // What the getters asked for, in the order they first asked: each key with its type, rule
  // and default ("a number in [0, 1); default 0.95"). `lemmalab list` builds each component
  // from an empty table and prints this, so the listing cannot drift from the code that reads.
  struct Use {
    std::string key;
    std::string description;
  };
  const std::vector<Use>& uses() const { return uses_; }
  // Describes a key that is read conditionally (after Has), for the listing.
  void Describe(std::string_view key, std::string description) {
    Note(key, std::move(description));
  }

  // What the getters returned, defaults filled in, with the sub-tables read through GetTable and
  // GetComponent under "key." (a compressor's options as "compressor.k"). Keys only tested with
  // Has and never read are absent. Arrays are given as their text ("[256, 128]").
  Hyperparameters Resolved() const;

  // Throws UserError "<where>: <context>: <message>", located at `key` when it is present.
  [[noreturn]] void Fail(std::string_view key, std::string_view message) const;

 private:
  const OptionValue* Lookup(std::string_view key);
  // Records (or refines) what `key` is; outer getters call it last, so theirs is what stays.
  void Note(std::string_view key, std::string description);
  // Records the value a getter returned for `key`.
  void Resolve(std::string_view key, Hyperparameters::Value value);
  template <typename V>
  const V& Expect(std::string_view key, const OptionValue& value, std::string_view what) const;

  std::string context_;
  std::string where_;
  std::map<std::string, OptionValue, std::less<>> values_;
  std::set<std::string, std::less<>> known_;
  std::vector<Use> uses_;
  std::map<std::string, Hyperparameters::Value, std::less<>> resolved_;
  std::map<std::string, std::shared_ptr<OptionTable>, std::less<>> children_;
};

}  // namespace lemmalab
