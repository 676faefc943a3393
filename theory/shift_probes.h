// The probe of the methods whose workers keep a running estimate of their own gradient and send
// compressed corrections to it (EF21's g_i^t, DIANA's shifts h_i; Quantity::kShift):
//   shift-error  per worker and step, ||s_i - g_i||^2 (`sq_error`) with s_i the worker's estimate
//                after the step and g_i the gradient the step consumed, and ||g_i||^2
//                (`gradient_sq`). With full gradients the mean of sq_error over the workers is
//                EF21's G^t (Richtárik et al. 2021, Eq. (9)): at step 1 it is the G^0 of Theorem
//                1's bound; gradient_sq at step 1 is DIANA's (1/n) sum_i ||grad f_i(x^0) -
//                h_i^0||^2 for shifts that start at 0 (docs/ef21-diana-marina.md).
#pragma once

#include "theory/probe.h"

namespace lemmalab {

template <typename T>
std::unique_ptr<Probe<T>> MakeShiftErrorProbe(const ProbeContext& context);

}  // namespace lemmalab
