// The options a component actually ran with, defaults filled in, as one flat table of dotted keys
// ("beta", "compressor.name", "schedule.lr"). OptionTable builds it from what its getters returned
// (OptionTable::Resolved), so it lists exactly what the code read: an algorithm that has no `eps`
// has no "eps" entry, and an option left at its default carries that default. `lemmalab run`
// stores it with the results (the `hyperparameters` table); probes and assertions read a run's
// options through it and nothing else, an optimizer's own options as the struct its reader fills
// from these entries (theory/optimizer_options.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace lemmalab {

class Hyperparameters {
 public:
  using Value = std::variant<bool, std::int64_t, double, std::string>;

  void Set(std::string key, Value value) { values_.insert_or_assign(std::move(key), value); }
  // Adds every entry of `other` under "prefix.".
  void Merge(std::string_view prefix, const Hyperparameters& other);

  bool Has(std::string_view key) const { return values_.find(key) != values_.end(); }
  // The value of `key`, or nullopt when the run's components did not read it. Number accepts
  // integers too. A value of another type is a bug (InternalError): keys have one type.
  std::optional<double> Number(std::string_view key) const;
  std::optional<std::int64_t> Integer(std::string_view key) const;
  std::optional<std::string> Text(std::string_view key) const;
  std::optional<bool> Flag(std::string_view key) const;

  const std::map<std::string, Value, std::less<>>& entries() const { return values_; }
  bool empty() const { return values_.empty(); }

  // The value as text ("0.9", "true", "top-k"), and its type name ("number", "integer",
  // "boolean", "string"), as the results database stores them.
  static std::string Show(const Value& value);
  static std::string_view TypeName(const Value& value);

 private:
  std::map<std::string, Value, std::less<>> values_;
};

}  // namespace lemmalab
