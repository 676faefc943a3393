// OpenBLAS's kernels (core/blas.h): lemmalab replaces generic kernels with the CPU's own, and
// leaves a user's OPENBLAS_CORETYPE alone.
#include "core/blas.h"

#include <cblas.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace lemmalab {
namespace {

TEST(BlasKernels, BetterKernelsUseTheCpusWidestVectors) {
  // The case of issue 37: OpenBLAS 0.3.21 does not know a cloud Xeon's model and picks Prescott.
  EXPECT_EQ(BetterKernels("Prescott", VectorIsa::kAvx512), "SkylakeX");
  EXPECT_EQ(BetterKernels("Nehalem", VectorIsa::kAvx2), "Haswell");
  EXPECT_EQ(BetterKernels("Core2", VectorIsa::kAvx), "Sandybridge");
  EXPECT_EQ(BetterKernels("Sandybridge", VectorIsa::kAvx2), "Haswell");
  // An AVX-512 Zen 4, which OpenBLAS 0.3.21 gives its AVX2 Zen kernels.
  EXPECT_EQ(BetterKernels("Zen", VectorIsa::kAvx512), "SkylakeX");
  // Kernels as wide as the CPU's vectors, or wider than a CPU reports, are kept.
  EXPECT_EQ(BetterKernels("Zen", VectorIsa::kAvx2), "");
  EXPECT_EQ(BetterKernels("Haswell", VectorIsa::kAvx2), "");
  EXPECT_EQ(BetterKernels("SkylakeX", VectorIsa::kAvx512), "");
  EXPECT_EQ(BetterKernels("Cooperlake", VectorIsa::kAvx512), "");
  EXPECT_EQ(BetterKernels("Prescott", VectorIsa::kNone), "");
  // OpenBLAS's names are matched as OPENBLAS_CORETYPE matches them, without case.
  EXPECT_EQ(KernelVectorIsa("skylakex"), VectorIsa::kAvx512);
  EXPECT_EQ(KernelVectorIsa("ARMV8"), VectorIsa::kNone);
}

// Restores the kernels and the choice's record the program started with.
class BlasKernelSwitch : public ::testing::Test {
 protected:
  void SetUp() override {
    if (UseOpenBlasKernels(initial_).empty()) GTEST_SKIP() << "this OpenBLAS cannot switch";
  }
  void TearDown() override {
    unsetenv("OPENBLAS_CORETYPE");
    UseOpenBlasKernels(initial_);
    ChooseOpenBlasKernels();
  }

  // A product through the kernels now selected equals the one computed by hand.
  static void ExpectProductRight() {
    const float a[] = {1, 2, 3, 4, 5, 6};      // 2 x 3
    const float b[] = {1, 0, -1, 2, 0.5f, 3};  // 3 x 2
    float c[4] = {};
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 2, 2, 3, 1.0f, a, 3, b, 2, 0.0f, c, 2);
    EXPECT_EQ(c[0], 1 * 1 + 2 * -1 + 3 * 0.5f);
    EXPECT_EQ(c[1], 1 * 0 + 2 * 2 + 3 * 3);
    EXPECT_EQ(c[2], 4 * 1 + 5 * -1 + 6 * 0.5f);
    EXPECT_EQ(c[3], 4 * 0 + 5 * 2 + 6 * 3);
  }

  const std::string initial_ = openblas_get_corename();
};

TEST_F(BlasKernelSwitch, GenericKernelsAreReplacedByTheCpusOwn) {
  if (CpuVectorIsa() == VectorIsa::kNone) GTEST_SKIP() << "a CPU without AVX has no better kernels";
  // Pretend OpenBLAS picked its generic kernels, as it does for a CPU model it does not know.
  ASSERT_EQ(UseOpenBlasKernels("Prescott"), "Prescott");
  ExpectProductRight();
  ChooseOpenBlasKernels();
  const std::string chosen = openblas_get_corename();
  EXPECT_EQ(KernelVectorIsa(chosen), CpuVectorIsa()) << chosen;
  ExpectProductRight();
  const std::string description = BlasDescription();
  EXPECT_NE(description.find(chosen + " kernels (chosen by lemmalab: OpenBLAS picked Prescott"),
            std::string::npos)
      << description;
  // The variable the selection read is not left behind for programs this one starts.
  EXPECT_EQ(std::getenv("OPENBLAS_CORETYPE"), nullptr);
}

TEST_F(BlasKernelSwitch, TheUsersCoretypeIsKept) {
  ASSERT_EQ(UseOpenBlasKernels("Prescott"), "Prescott");
  setenv("OPENBLAS_CORETYPE", "Prescott", 1);
  ChooseOpenBlasKernels();
  EXPECT_STREQ(openblas_get_corename(), "Prescott");
  EXPECT_NE(BlasDescription().find("Prescott kernels (OPENBLAS_CORETYPE=Prescott, the user's"),
            std::string::npos)
      << BlasDescription();
}

}  // namespace
}  // namespace lemmalab
