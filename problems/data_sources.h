// The loaders behind DataSources() that live next to their readers (they need what the reader
// knows beyond Samples: image shapes, index ranges), and the path helpers the loaders share.
// Not part of the data interface (problems/dataset.h).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "core/options.h"
#include "problems/dataset.h"

namespace lemmalab {

Dataset LoadIdx(OptionTable& options, const DataContext& context);
Dataset LoadCifar10(OptionTable& options, const DataContext& context);
Dataset LoadLibsvm(OptionTable& options, const DataContext& context);

// What is left of `limit` while the training set `train` is held: a source's test set is read
// with its training set in memory.
MemoryLimit TestSetLimit(const MemoryLimit& limit, const Samples& train);

// `given` (the value of option `key`, or one entry of it) resolved as ResolveDataFile does.
std::filesystem::path ResolveDataPath(OptionTable& options, std::string_view key,
                                      const std::string& given, const DataContext& context);

// The folder option `key` names, resolved against the spec's folder; fails (naming the option)
// when it does not exist or is not a folder.
std::filesystem::path ResolveDataDir(OptionTable& options, std::string_view key,
                                     const DataContext& context);

// `name` or `name`.gz in `dir` (the folder option `key` names), if either is there; both at once
// is ambiguous and fails.
std::optional<std::filesystem::path> FindDataFile(OptionTable& options, std::string_view key,
                                                  const std::filesystem::path& dir,
                                                  const std::string& name);

// The name of a folder for descriptions ("fashion-mnist"), also when written with a trailing
// slash or as ".".
std::string FolderName(const std::filesystem::path& dir);

}  // namespace lemmalab
