// A registry: one explicit table of named entries per kind (optimizers, compressors, ...).
//
// Each kind builds its table once, in a function-local static, from a list written out in one
// place (no self-registering statics, which linkers drop). Duplicate names are a bug and are
// rejected when the table is built. An unknown name is a user error that suggests the closest
// registered name.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/options.h"
#include "core/text.h"

namespace lemmalab {

// Entry must have `std::string_view name` and `std::string_view summary` members.
template <typename Entry>
class Registry {
 public:
  Registry(std::string kind, std::vector<Entry> entries)
      : kind_(std::move(kind)), entries_(std::move(entries)) {
    std::sort(entries_.begin(), entries_.end(),
              [](const Entry& a, const Entry& b) { return a.name < b.name; });
    for (std::size_t i = 1; i < entries_.size(); ++i) {
      LEMMALAB_CHECK(entries_[i - 1].name != entries_[i].name, "duplicate {} '{}'", kind_,
                     entries_[i].name);
    }
  }

  const std::vector<Entry>& entries() const { return entries_; }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const Entry& e : entries_) out.emplace_back(e.name);
    return out;
  }

  const Entry* Find(std::string_view name) const {
    for (const Entry& e : entries_) {
      if (e.name == name) return &e;
    }
    return nullptr;
  }

  // The entry named by `table`'s `key`; fails with a suggestion when there is none.
  const Entry& Get(OptionTable& table, std::string_view key = "name") const {
    const std::string name = table.RequireString(key);
    if (const Entry* e = Find(name)) return *e;
    table.Fail(key, UnknownName(kind_, name, names()));
  }

 private:
  std::string kind_;
  std::vector<Entry> entries_;
};

}  // namespace lemmalab

namespace lemmalab {

// Entries built for both precisions carry `make_f32` and `make_f64`; this picks the one for T.
template <typename T, typename Entry>
constexpr auto FactoryFor(const Entry& entry) {
  if constexpr (std::is_same_v<T, double>) {
    return entry.make_f64;
  } else {
    return entry.make_f32;
  }
}

}  // namespace lemmalab
