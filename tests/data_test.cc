// Data sources and shards: the shipped table, CSV errors with file and line, gzip, synthetic
// data, standardisation, iid shards.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/random/uniform_int_distribution.hpp>
#include <cmath>
#include <memory>
#include <set>

#include "core/error.h"
#include "core/rng.h"
#include "problems/dataset.h"
#include "problems/sharding.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::WriteFile;
using testing::WriteGzipFile;

std::string CsvError(const std::filesystem::path& path, std::string_view label = "") {
  return testing::UserErrorOf([&] { ReadCsv(path, label); });
}

TEST(Csv, ReadsTheShippedBreastCancerTable) {
  const CsvTable table = ReadCsv(testing::SourceDir() / "data/breast_cancer.csv", "target");
  const Samples& data = table.samples;
  EXPECT_EQ(data.size(), 569);
  EXPECT_EQ(data.features.cols(), 30);
  EXPECT_EQ(data.labels.sum(), 357);  // benign = 1, as data/README.md states
  EXPECT_EQ(table.feature_names.front(), "mean_radius");
  EXPECT_EQ(data.features(0, 0), 17.99);  // first field of the first data row
  EXPECT_EQ(data.features(568, 29), 0.07039);
}

TEST(Csv, PlainAndGzipGiveTheSameData) {
  TempDir dir;
  const std::string text = "a,b,y\n1.5,-2,1\n3,4e-3,0\n";
  WriteFile(dir / "t.csv", text);
  WriteGzipFile(dir / "t.csv.gz", text);
  const Samples plain = ReadCsv(dir / "t.csv", "y").samples;
  const Samples zipped = ReadCsv(dir / "t.csv.gz", "y").samples;
  EXPECT_EQ(plain.features, zipped.features);
  EXPECT_EQ(plain.labels, zipped.labels);
  EXPECT_EQ(plain.features(1, 1), 4e-3);
}

TEST(Csv, LabelColumnAnywhereDefaultingToTheLast) {
  TempDir dir;
  WriteFile(dir / "t.csv", "y,a,b\n1,2,3\n0,5,6\n");
  WriteFile(dir / "u.csv", "a,y\n1,2.5\n");
  const Samples first = ReadCsv(dir / "t.csv", "y").samples;
  EXPECT_EQ(first.labels, Eigen::Vector2i(1, 0));
  EXPECT_EQ(first.features.row(1), Eigen::RowVector2d(5, 6));
  EXPECT_THAT(CsvError(dir / "u.csv"), HasSubstr("u.csv:2: label column 'y' must hold class "
                                                 "indices 0, 1, ... (at most 1048576), got 2.5"));
}

TEST(Csv, ErrorsNameFileAndLine) {
  TempDir dir;
  WriteFile(dir / "bad.csv", "a,b,y\n1,2,1\n1,abc,0\n");
  EXPECT_EQ(CsvError(dir / "bad.csv"),
            (dir / "bad.csv").string() + ":3: field 2 ('b'): 'abc' is not a finite number");
  WriteFile(dir / "short.csv", "a,b,y\n1,2,1\n\n1,2\n");
  EXPECT_EQ(CsvError(dir / "short.csv"),
            (dir / "short.csv").string() + ":4: expected 3 fields as in the header, found 2");
  WriteFile(dir / "empty.csv", "");
  EXPECT_THAT(CsvError(dir / "empty.csv"), HasSubstr("empty file"));
  WriteFile(dir / "header.csv", "a,b,y\n");
  EXPECT_THAT(CsvError(dir / "header.csv"), HasSubstr("no data rows"));
  WriteFile(dir / "quote.csv", "a,y\n\"1,1\n");
  EXPECT_THAT(CsvError(dir / "quote.csv"), HasSubstr("malformed CSV"));
  WriteFile(dir / "inf.csv", "a,y\ninf,1\n");
  EXPECT_THAT(CsvError(dir / "inf.csv"), HasSubstr(":2: field 1 ('a'): 'inf' is not a finite"));
  EXPECT_THAT(CsvError(dir / "bad.csv", "label"),
              HasSubstr("no column named 'label' for the label (columns: a, b, y)"));
  EXPECT_THAT(CsvError(dir / "missing.csv"), HasSubstr("cannot open"));
  WriteFile(dir / "sign.csv", "a,y\n+2,1\n+-1,0\n");
  EXPECT_THAT(CsvError(dir / "sign.csv"), HasSubstr(":3: field 1 ('a'): '+-1' is not a finite"));
  WriteFile(dir / "nul.csv", std::string("a,y\n1,1\n2\0,0\n3,1\n", 17));
  EXPECT_THAT(CsvError(dir / "nul.csv"), HasSubstr("nul.csv:3: NUL byte"));
}

TEST(Csv, LeadingPlusSignIsANumber) {
  TempDir dir;
  WriteFile(dir / "t.csv", "a,y\n+2.5,1\n+.5,0\n");
  EXPECT_EQ(ReadCsv(dir / "t.csv", "").samples.features, Eigen::Vector2d(2.5, 0.5));
}

TEST(Csv, LineNumbersStayExactAcrossReadBuffers) {
  // Longer than the 64 KiB read buffer, with the bad field far down the file.
  TempDir dir;
  std::string text = "a,b,y\n";
  for (int i = 0; i < 20000; ++i) text += "1.25,2.5,1\n";
  text += "1,oops,0\n";
  WriteFile(dir / "long.csv", text);
  EXPECT_THAT(CsvError(dir / "long.csv"), HasSubstr("long.csv:20002: field 2 ('b'): 'oops'"));
}

TEST(Data, PathMustBeAnExistingRegularFile) {
  TempDir dir;
  std::filesystem::create_directory(dir / "folder");
  for (const auto& [path, message] :
       {std::pair<std::string, std::string>{"folder", "data file 'folder' is not a regular file"},
        {"nope.csv", "data file 'nope.csv' not found"}}) {
    OptionTable options("[data]", "s.toml:1:1");
    options.Set("source", {std::string("csv"), "s.toml:2:1"});
    options.Set("path", {path, "s.toml:3:1"});
    EXPECT_THAT(testing::UserErrorOf([&] {
                  LoadData(options, {0, dir.path()});
                }),
                HasSubstr("s.toml:3:1: [data]: " + message));
  }
}

TEST(Csv, TruncatedGzipIsAnErrorNotAShortTable) {
  TempDir dir;
  std::string text = "a,b,y\n";
  for (int i = 0; i < 2000; ++i) text += fmt::format("{},{},{}\n", i, 2 * i, i % 2);
  WriteGzipFile(dir / "t.csv.gz", text);
  const std::string bytes = testing::ReadFile(dir / "t.csv.gz");
  WriteFile(dir / "cut.csv.gz", bytes.substr(0, bytes.size() / 2));
  EXPECT_THAT(CsvError(dir / "cut.csv.gz"), HasSubstr("truncated or corrupt"));
}

// Issue 33, finding 8: bytes after a gzip stream were skipped (zlib ignores them), while a plain
// file's extra bytes are refused. Streams written one after another are still one file's data.
TEST(Csv, BytesAfterTheGzipDataAreAnError) {
  TempDir dir;
  std::string text = "a,b,y\n";
  for (int i = 0; i < 200; ++i) text += fmt::format("{},{},{}\n", i, 2 * i, i % 2);
  WriteGzipFile(dir / "t.csv.gz", text);
  const std::string bytes = testing::ReadFile(dir / "t.csv.gz");
  WriteFile(dir / "garbage.csv.gz", bytes + "appended later");
  EXPECT_THAT(CsvError(dir / "garbage.csv.gz"),
              HasSubstr("14 bytes follow the end of the gzip data"));
  WriteFile(dir / "zeros.csv.gz", bytes + std::string(512, '\0'));
  EXPECT_THAT(CsvError(dir / "zeros.csv.gz"), HasSubstr("512 bytes follow the end"));
  // Two streams: the second half of the table compressed after the first.
  const std::size_t half = text.find('\n', text.size() / 2) + 1;
  WriteGzipFile(dir / "first.gz", text.substr(0, half));
  WriteGzipFile(dir / "second.gz", text.substr(half));
  WriteFile(dir / "two.csv.gz",
            testing::ReadFile(dir / "first.gz") + testing::ReadFile(dir / "second.gz"));
  EXPECT_EQ(ReadCsv(dir / "two.csv.gz", "y").samples.features,
            ReadCsv(dir / "t.csv.gz", "y").samples.features);
}

TEST(Dataset, StandardizeGivesZeroMeanUnitVarianceAndZeroesConstantColumns) {
  // 0.1 is not a binary fraction: the mean of 569 copies is not exactly 0.1, and a naive
  // (x - mean) / sd turns the rounding noise into +-1.
  Dataset data;
  RowMatrix<double>& x = data.train.features;
  x.resize(569, 2);
  for (Eigen::Index i = 0; i < 569; ++i) x.row(i) << static_cast<double>(i % 7), 0.1;
  StandardizeFeatures(data);
  EXPECT_NEAR(x.col(0).mean(), 0, 1e-14);
  EXPECT_NEAR(x.col(0).squaredNorm() / 569, 1, 1e-14);
  EXPECT_EQ(x.col(1), Eigen::VectorXd::Zero(569));
}

// Byte features (IDX, CIFAR-10) are stored as bytes but must give every consumer exactly the
// values dense doubles of the same data give: static_cast<T>(b), after ScalePixels
// static_cast<T>(b / 255.0), for every byte, whichever way the rows are read.
TEST(Dataset, ByteFeaturesConvertExactlyAsDenseDoubles) {
  ByteMatrix all(2, 256);
  for (int b = 0; b < 256; ++b) {
    all(0, b) = static_cast<std::uint8_t>(b);
    all(1, b) = static_cast<std::uint8_t>(255 - b);
  }
  for (const bool pixels : {false, true}) {
    Dataset bytes, dense;
    bytes.train.bytes = std::make_shared<const ByteMatrix>(all);
    dense.train.features = all.cast<double>();
    if (pixels) {
      ScalePixels(bytes);
      ScalePixels(dense);
    }
    ASSERT_TRUE(bytes.train.holds_bytes());
    EXPECT_EQ(bytes.num_features(), 256);
    EXPECT_EQ(bytes.train.Dense(), dense.train.features) << pixels;
    RowMatrix<float> as_float(2, 256);
    bytes.train.RowsAs(0, 2, as_float.data());
    EXPECT_EQ(as_float, dense.train.features.cast<float>()) << pixels;
    const std::vector<std::int64_t> swapped = {1, 0, 1};
    RowMatrix<float> gathered(3, 256), expected(3, 256);
    bytes.train.GatherAs(swapped, gathered.data());
    dense.train.GatherAs(swapped, expected.data());
    EXPECT_EQ(gathered, expected) << pixels;
    EXPECT_EQ(gathered.row(0), dense.train.features.row(1).cast<float>()) << pixels;
  }

  // Standardising needs arbitrary values: the bytes become the doubles they stood for.
  Dataset bytes, dense;
  bytes.train.bytes = std::make_shared<const ByteMatrix>(all);
  dense.train.features = all.cast<double>();
  StandardizeFeatures(bytes);
  StandardizeFeatures(dense);
  EXPECT_FALSE(bytes.train.holds_bytes());
  EXPECT_EQ(bytes.train.features, dense.train.features);
}

TEST(Dataset, SyntheticLogisticIsAFunctionOfTheSeed) {
  const Dataset a = MakeSyntheticLogistic(200, 5, 4.0, 1);
  const Dataset b = MakeSyntheticLogistic(200, 5, 4.0, 1);
  const Dataset c = MakeSyntheticLogistic(200, 5, 4.0, 2);
  EXPECT_EQ(a.train.features, b.train.features);
  EXPECT_EQ(a.train.labels, b.train.labels);
  EXPECT_NE(a.train.features, c.train.features);
  // Standard normal features; both classes present.
  EXPECT_NEAR(a.train.features.mean(), 0, 0.1);
  EXPECT_GT(a.train.labels.sum(), 40);
  EXPECT_LT(a.train.labels.sum(), 160);
}

TEST(Shards, IidShardsPartitionTheSamplesEvenly) {
  for (const auto& [samples, workers] : {std::pair{569, 8}, {10, 10}, {100, 3}, {7, 1}}) {
    const Shards shards = IidShards(samples, workers, 123);
    ASSERT_EQ(shards.size(), static_cast<std::size_t>(workers));
    std::set<std::int64_t> all;
    for (const auto& shard : shards) {
      EXPECT_TRUE(std::is_sorted(shard.begin(), shard.end()));
      EXPECT_GE(static_cast<int>(shard.size()), samples / workers);
      EXPECT_LE(static_cast<int>(shard.size()), samples / workers + 1);
      all.insert(shard.begin(), shard.end());
    }
    EXPECT_EQ(all.size(), static_cast<std::size_t>(samples));
    EXPECT_EQ(*all.rbegin(), samples - 1);
  }
}

TEST(Shards, IidShardsDependOnTheSeedOnly) {
  EXPECT_EQ(IidShards(100, 4, 9), IidShards(100, 4, 9));
  EXPECT_NE(IidShards(100, 4, 9), IidShards(100, 4, 10));
  // Not the identity assignment: a shuffle happened.
  EXPECT_NE(IidShards(100, 4, 9)[0].back(), 24);
}

TEST(Shards, ContiguousSendsSampleIToWorkerFloorINOverN) {
  for (const auto& [samples, workers] : {std::pair{10, 3}, {569, 8}, {7, 7}}) {
    const Shards shards = ContiguousShards(samples, workers);
    for (int w = 0; w < workers; ++w) {
      for (std::int64_t i : shards[static_cast<std::size_t>(w)]) {
        EXPECT_EQ(i * workers / samples, w);
      }
    }
  }
  // 10 samples on 3 workers: floor(3i/10) = 0 0 0 0 1 1 1 2 2 2.
  EXPECT_EQ(ContiguousShards(10, 3), (Shards{{0, 1, 2, 3}, {4, 5, 6}, {7, 8, 9}}));
}

TEST(Shards, SortedLabelsGiveEachWorkerOneClassWhenTheyDivide) {
  Eigen::VectorXi labels(12);
  labels << 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1;
  const Shards shards = SortedLabelShards(labels, 3);
  ASSERT_EQ(shards.size(), 3u);
  for (int w = 0; w < 3; ++w) {
    for (std::int64_t i : shards[static_cast<std::size_t>(w)]) EXPECT_EQ(labels[i], w);
    EXPECT_EQ(shards[static_cast<std::size_t>(w)].size(), 4u);
  }
}

// Mean over workers of the largest class share in the shard: 1 = one class per worker.
double MeanLargestShare(const Shards& shards, const Eigen::VectorXi& labels, int classes) {
  double total = 0;
  for (const auto& shard : shards) {
    std::vector<int> counts(static_cast<std::size_t>(classes), 0);
    for (std::int64_t i : shard) ++counts[static_cast<std::size_t>(labels[i])];
    total += static_cast<double>(*std::max_element(counts.begin(), counts.end())) /
             static_cast<double>(shard.size());
  }
  return total / static_cast<double>(shards.size());
}

TEST(Shards, DirichletPartitionsAndSkewsLabelsLessAsAlphaGrows) {
  Eigen::VectorXi labels(3000);
  for (Eigen::Index i = 0; i < labels.size(); ++i) labels[i] = static_cast<int>(i % 10);
  double previous = 1.1;
  for (const double alpha : {0.05, 1.0, 1000.0}) {
    const Shards shards = DirichletShards(labels, 10, 8, alpha, 4);
    EXPECT_EQ(shards, DirichletShards(labels, 10, 8, alpha, 4));
    std::set<std::int64_t> all;
    for (const auto& shard : shards) {
      EXPECT_FALSE(shard.empty());
      EXPECT_TRUE(std::is_sorted(shard.begin(), shard.end()));
      all.insert(shard.begin(), shard.end());
    }
    EXPECT_EQ(all.size(), 3000u) << "a partition: every sample exactly once";
    const double share = MeanLargestShare(shards, labels, 10);
    EXPECT_LT(share, previous) << alpha;
    previous = share;
  }
  // alpha = 1000 is nearly iid: each class about 10% of each shard.
  EXPECT_LT(previous, 0.15);
  EXPECT_GT(MeanLargestShare(DirichletShards(labels, 10, 8, 0.05, 4), labels, 10), 0.6);
}

TEST(Shards, DirichletWithTooSmallAlphaIsAClearError) {
  Eigen::VectorXi labels = Eigen::VectorXi::Zero(20);
  EXPECT_THAT(testing::UserErrorOf([&] { DirichletShards(labels, 1, 16, 1e-4, 1); }),
              HasSubstr("alpha = 0.0001 left some of the 16 workers without samples"));
}

TEST(Dataset, StandardizeAppliesTrainingStatisticsToTheTestSet) {
  Dataset data;
  data.train.features.resize(4, 2);
  data.train.features << 1, 5, 3, 5, 5, 5, 7, 5;  // column 0: mean 4, sd sqrt(5); column 1 constant
  data.test = Samples{};
  data.test->features.resize(2, 2);
  data.test->features << 4, 5, 9, 8;
  StandardizeFeatures(data);
  EXPECT_DOUBLE_EQ(data.test->features(0, 0), 0);
  EXPECT_DOUBLE_EQ(data.test->features(1, 0), 5 / std::sqrt(5.0));
  // A column constant on the training set is centred by that constant, not scaled.
  EXPECT_EQ(data.test->features(0, 1), 0);
  EXPECT_EQ(data.test->features(1, 1), 3);
  EXPECT_EQ(data.train.features.col(1), Eigen::VectorXd::Zero(4));
}

// `samples` keeps the first N training and test samples, before normalisation (whose statistics
// are then the kept samples').
TEST(Data, SamplesKeepsTheFirstOnes) {
  TempDir dir;
  WriteFile(dir / "train.csv", "a,y\n1,0\n2,1\n3,0\n10,1\n");
  WriteFile(dir / "test.csv", "a,y\n5,1\n6,0\n7,1\n");
  OptionTable options("[data]", "s.toml:1:1");
  options.Set("source", {std::string("csv"), "s.toml:2:1"});
  options.Set("path", {std::string("train.csv"), "s.toml:3:1"});
  options.Set("test_path", {std::string("test.csv"), "s.toml:4:1"});
  options.Set("samples", {std::int64_t{2}, "s.toml:5:1"});
  options.Set("normalize", {std::string("standardize"), "s.toml:6:1"});
  const Dataset data = LoadData(options, {0, dir.path()});
  ASSERT_EQ(data.train.size(), 2);
  ASSERT_EQ(data.test->size(), 2);
  EXPECT_EQ(data.train.labels[1], 1);
  // Standardised over {1, 2}: -1 and 1 (the dropped 10 would have shifted them).
  EXPECT_DOUBLE_EQ(data.train.features(0, 0), -1.0);
  EXPECT_DOUBLE_EQ(data.train.features(1, 0), 1.0);
  EXPECT_THAT(data.description, HasSubstr("(first 2 samples)"));
  options.Set("samples", {std::int64_t{0}, "s.toml:5:1"});
  EXPECT_THAT(testing::UserErrorOf([&] {
                LoadData(options, {0, dir.path()});
              }),
              HasSubstr("samples must be"));
}

TEST(Data, ClassCountIncludesTheTestSetsLabels) {
  TempDir dir;
  WriteFile(dir / "train.csv", "a,y\n1,0\n2,1\n");
  WriteFile(dir / "test.csv", "a,y\n1,2\n");
  OptionTable options("[data]", "s.toml:1:1");
  options.Set("source", {std::string("csv"), "s.toml:2:1"});
  options.Set("path", {std::string("train.csv"), "s.toml:3:1"});
  options.Set("test_path", {std::string("test.csv"), "s.toml:4:1"});
  EXPECT_EQ(LoadData(options, {0, dir.path()}).classes, 3);
  options.Set("classes", {std::int64_t{2}, "s.toml:5:1"});
  EXPECT_THAT(testing::UserErrorOf([&] {
                LoadData(options, {0, dir.path()});
              }),
              HasSubstr("s.toml:5:1: [data]: the data has label 2, but classes = 2 allows 0..1"));
}

TEST(Shards, IidShardsReplayTheDocumentedShuffle) {
  // An independent Fisher-Yates over the documented stream, cut at floor(w N / n).
  const std::int64_t samples = 50;
  std::vector<std::int64_t> order(samples);
  for (std::int64_t i = 0; i < samples; ++i) order[static_cast<std::size_t>(i)] = i;
  PhiloxStream stream({77, Purpose::kShardShuffle, kGlobalStream, 0});
  for (std::int64_t i = samples - 1; i >= 1; --i) {
    const auto j = boost::random::uniform_int_distribution<std::int64_t>(0, i)(stream);
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  const Shards shards = IidShards(samples, 3, 77);
  for (int w = 0; w < 3; ++w) {
    std::vector<std::int64_t> expected(order.begin() + samples * w / 3,
                                       order.begin() + samples * (w + 1) / 3);
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(shards[static_cast<std::size_t>(w)], expected) << "worker " << w;
  }
}

}  // namespace
}  // namespace lemmalab
