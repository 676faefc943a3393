// `lemmalab report DIR`: what a folder of results says, configuration by configuration.
//
// DIR is a sweep's folder, a run's, or a check's (whose [check] sweep keeps one experiment per
// seed-<s>-workers-<n>/ subfolder). Runs that differ only in their seed are one configuration;
// for each, the report gives the mean and a 95% confidence interval (Student's t over the seeds'
// runs that completed) of the final loss, accuracy, test loss and accuracy, bits sent per
// parameter per step, projected communication time, and every probe series' mean (divided by d
// where its summary is per dimension, theory/probe_series.h). Diverged runs are counted, not
// averaged. A check folder's verdicts are aggregated over seeds: holds in k of n, and the
// measured value's mean with its interval where every seed measured against the same bound.
//
// Writes DIR/summary.csv (one row per configuration, its hyperparameters that vary as columns,
// then <quantity>_mean, <quantity>_ci95, <quantity>_n), DIR/report.md, and the plots
// (python/lemmalab/plots.py, matplotlib) under DIR/plots/; without Python or matplotlib the
// tables are still written and the report says how to get the plots.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace lemmalab {

struct ReportOptions {
  std::filesystem::path dir;
  bool plots = true;
};

struct ReportResult {
  std::string text;                  // what `lemmalab report` prints
  std::vector<std::string> written;  // the files it wrote
};

ReportResult WriteReport(const ReportOptions& options);

}  // namespace lemmalab
