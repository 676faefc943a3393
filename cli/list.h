// `lemmalab list [KIND [NAME]] [--json]`: every registered component with its summary and the
// options it reads (each with its type, rule and default, from the same getters that read a spec,
// so the listing cannot drift from the code), the schemes, network presets, metrics and devices.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lemmalab {

// The kinds `list` takes: optimizers, compressors, problems, data, schedules, probes,
// assertions, schemes, networks, metrics, devices.
std::vector<std::string> ListKinds();

// The listing of `kind` (every kind when empty), or of its component `name` alone, as text or
// JSON; UserError for an unknown kind or name.
std::string ListRegistries(bool json, std::string_view kind = "", std::string_view name = "");

}  // namespace lemmalab
