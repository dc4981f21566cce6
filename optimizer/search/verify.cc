#include "optimizer/search/verify.h"

#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "optimizer/search/algebra.h"
#include "optimizer/search/finite_field.h"
#include "optimizer/search/interpret.h"

namespace kiln::search {
namespace {

std::vector<int64_t> Concrete(const std::vector<Dim>& sizes) {
  std::vector<int64_t> out;
  for (const Dim& d : sizes) out.push_back(d.value());
  return out;
}

// Runs the candidate at `sizes` on `inputs` (by region input).
template <typename Alg, typename V = typename Alg::Value>
absl::StatusOr<DenseArray<V>> RunCandidate(const Region& region, const Candidate& candidate,
                                           const std::vector<Dim>& sizes,
                                           const std::vector<DenseArray<V>>& inputs, const Alg& alg) {
  absl::StatusOr<ugraph::KernelGraph> graph = Instantiate(region, candidate, sizes);
  if (!graph.ok()) return graph.status();
  std::vector<DenseArray<V>> tensors(graph->tensors.size());
  for (size_t i = 0; i < inputs.size(); ++i) tensors[i] = inputs[i];
  if (absl::Status s = RunTiledGraph(*graph, tensors, alg); !s.ok()) return s;
  return std::move(tensors.back());
}

}  // namespace

std::vector<Dim> VerificationSizes(const Region& region, const Schedule& schedule) {
  std::vector<Dim> sizes;
  for (size_t c = 0; c < region.class_size.size(); ++c) {
    const Dim& real = region.class_size[c];
    if (real == Dim(1)) {
      sizes.push_back(1);
    } else if (schedule.map[c] == Schedule::Map::kFull) {
      sizes.push_back(real.is_concrete() ? real.value() : 1);
    } else {
      sizes.push_back(schedule.tile[c] + 1);
    }
  }
  // A causal mask's keys at least as many as its queries, as in the region
  // (else the first queries would see no key): whole loop tiles and a
  // ragged one.
  for (const RegionOp& op : region.ops) {
    if (!op.mask.on()) continue;
    const int rows = op.classes[op.mask.row], keys = op.classes[op.mask.col];
    if (schedule.map[keys] == Schedule::Map::kFull || !sizes[rows].is_concrete()) continue;
    const int64_t tile = schedule.tile[keys];
    while (sizes[keys].value() < sizes[rows].value()) sizes[keys] = sizes[keys].value() + tile;
  }
  return sizes;
}

absl::StatusOr<bool> FieldTest(
    const Region& region, const std::vector<int64_t>& sizes, std::mt19937_64& rng,
    const std::function<absl::StatusOr<FieldArray>(const std::vector<FieldArray>&, const FieldAlgebra&)>& other) {
  const Field field = Field::Random(rng());
  FieldAlgebra alg(field);
  std::vector<FieldArray> inputs;
  for (size_t i = 0; i < region.inputs.size(); ++i) {
    FieldArray a = FieldArray::Filled(region.InputShape(static_cast<int>(i), sizes), {});
    for (FieldElement& x : a.data) x = field.Uniform(rng(), rng());
    inputs.push_back(std::move(a));
  }
  absl::StatusOr<FieldArray> want = EvaluateRegion(region, sizes, inputs, alg);
  if (!want.ok()) return want.status();
  absl::StatusOr<FieldArray> got = other(inputs, alg);
  if (!got.ok()) return got.status();
  if (got->data.size() != want->data.size()) return false;
  for (size_t i = 0; i < got->data.size(); ++i) {
    if (got->data[i].p != want->data[i].p) return false;
  }
  return true;
}

absl::StatusOr<bool> VerifyOverFiniteFields(const Region& region, const Candidate& candidate, int tests,
                                            uint64_t seed) {
  const std::vector<Dim> sizes = VerificationSizes(region, candidate.schedule);
  std::mt19937_64 rng(seed);
  for (int t = 0; t < tests; ++t) {
    absl::StatusOr<bool> same =
        FieldTest(region, Concrete(sizes), rng, [&](const std::vector<FieldArray>& inputs, const FieldAlgebra& alg) {
          return RunCandidate(region, candidate, sizes, inputs, alg);
        });
    if (!same.ok() || !*same) return same;
  }
  return true;
}

absl::StatusOr<FloatCheck> CheckFloatingPoint(const Region& region, const Candidate& candidate, uint64_t seed) {
  const std::vector<Dim> sizes = VerificationSizes(region, candidate.schedule);
  const std::vector<int64_t> concrete = Concrete(sizes);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  FloatAlgebra alg;
  std::vector<DenseArray<float>> inputs;
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < region.inputs.size(); ++i) {
    const std::vector<int64_t> shape = region.InputShape(static_cast<int>(i), concrete);
    DenseArray<float> a = DenseArray<float>::Filled(shape, 0);
    for (float& x : a.data) x = alg.Round(region.input_dtypes[i], normal(rng));
    tensors.push_back(Tensor::FromHost<float>(a.data, shape));
    inputs.push_back(std::move(a));
  }
  absl::StatusOr<std::vector<float>> want = ReplayRegion(region, tensors).to_host<float>();
  if (!want.ok()) return want.status();
  absl::StatusOr<DenseArray<float>> got = RunCandidate(region, candidate, sizes, inputs, alg);
  if (!got.ok()) return got.status();
  if (got->data.size() != want->size()) return absl::InternalError("float check: output sizes differ");
  FloatCheck check;
  double scale = 1e-6;
  for (float w : *want) scale = std::max(scale, static_cast<double>(std::abs(w)));
  for (size_t i = 0; i < want->size(); ++i) {
    const double err = std::abs(static_cast<double>(got->data[i]) - (*want)[i]);
    check.max_error = std::max(check.max_error, std::isnan(err) ? INFINITY : err / scale);
  }
  check.tolerance = region.output_dtype == DType::kF32 ? 1e-4 : region.output_dtype == DType::kF16 ? 1e-2 : 4e-2;
  check.passed = check.max_error <= check.tolerance;
  return check;
}

}  // namespace kiln::search
