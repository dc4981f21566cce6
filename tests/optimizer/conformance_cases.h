// The op conformance suite: every primitive and composite, in every dtype it
// takes, over shapes with odd sizes (1, 3, 17, 127, 4097) and tile
// multiples, dense and through non-contiguous views. The same cases drive
// the CPU-side check that every generated kernel compiles and the GPU-side
// comparison against the CPU reference.
#ifndef KILN_TESTS_OPTIMIZER_CONFORMANCE_CASES_H_
#define KILN_TESTS_OPTIMIZER_CONFORMANCE_CASES_H_

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tensor/tensor.h"

namespace kiln::testing {

struct InputSpec {
  DType dtype = DType::kF32;
  std::vector<int64_t> sizes;
  double low = -2;  // values drawn uniformly from [low, high] (integers: whole)
  double high = 2;
  // Non-contiguous inputs are views of a larger base tensor.
  enum class Layout { kDense, kTransposed, kStrided } layout = Layout::kDense;
};

struct ConformanceCase {
  std::string name;  // "exp/f16/[3,17]": unique, usable as a test name
  std::vector<InputSpec> inputs;
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> build;
  Bindings bindings;
  double atol = 1e-5;
  double rtol = 1e-5;
};

// gtest prints a case by its name.
inline void PrintTo(const ConformanceCase& c, std::ostream* os) { *os << c.name; }

// The case's name as a gtest parameter name (letters, digits, underscores).
std::string TestName(const ::testing::TestParamInfo<ConformanceCase>& info);

// `every_shape`: all shapes of each op and dtype; otherwise one shape each
// (enough to compile every kind of kernel the suite produces).
std::vector<ConformanceCase> ConformanceCases(bool every_shape);

// The case's inputs with values from `seed`, placed on `device`.
std::vector<Tensor> MakeInputs(const ConformanceCase& c, uint64_t seed, Device device);

}  // namespace kiln::testing

#endif  // KILN_TESTS_OPTIMIZER_CONFORMANCE_CASES_H_
