#include "core/hyperparameters.h"

#include <fmt/format.h>

#include "core/error.h"

namespace lemmalab {
namespace {

template <typename V>
std::optional<V> Typed(const std::map<std::string, Hyperparameters::Value, std::less<>>& values,
                       std::string_view key, std::string_view want) {
  const auto it = values.find(key);
  if (it == values.end()) return std::nullopt;
  const V* v = std::get_if<V>(&it->second);
  LEMMALAB_CHECK(v != nullptr, "hyperparameter '{}' is a {}, read as a {}", key,
                 Hyperparameters::TypeName(it->second), want);
  return *v;
}

}  // namespace

void Hyperparameters::Merge(std::string_view prefix, const Hyperparameters& other) {
  for (const auto& [key, value] : other.values_) Set(fmt::format("{}.{}", prefix, key), value);
}

std::optional<double> Hyperparameters::Number(std::string_view key) const {
  const auto it = values_.find(key);
  if (it != values_.end()) {
    if (const auto* i = std::get_if<std::int64_t>(&it->second)) return static_cast<double>(*i);
  }
  return Typed<double>(values_, key, "number");
}

std::optional<std::int64_t> Hyperparameters::Integer(std::string_view key) const {
  return Typed<std::int64_t>(values_, key, "integer");
}

std::optional<std::string> Hyperparameters::Text(std::string_view key) const {
  return Typed<std::string>(values_, key, "string");
}

std::optional<bool> Hyperparameters::Flag(std::string_view key) const {
  return Typed<bool>(values_, key, "boolean");
}

std::string Hyperparameters::Show(const Value& value) {
  if (const auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const auto* i = std::get_if<std::int64_t>(&value)) return fmt::format("{}", *i);
  if (const auto* d = std::get_if<double>(&value)) return fmt::format("{}", *d);
  return std::get<std::string>(value);
}

std::string_view Hyperparameters::TypeName(const Value& value) {
  switch (value.index()) {
    case 0:
      return "boolean";
    case 1:
      return "integer";
    case 2:
      return "number";
    default:
      return "string";
  }
}

}  // namespace lemmalab
