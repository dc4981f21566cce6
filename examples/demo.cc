// `kiln demo`: the path of a value, shown on a small trace.
#include <cstdio>

#include "examples/commands.h"
#include "ops/ops.h"

namespace kiln::cli {

int RunDemo(const std::vector<std::string>& args) {
  // A decoder-style fragment with a symbolic sequence length.
  const Symbol seq("seq", 64);
  const Tensor x = random_normal({Dim(seq), 32}, /*seed=*/1);
  const Tensor norm_weight = ones({32});
  const Tensor wq = random_normal({32, 32}, /*seed=*/2, 0, 0.2);
  const Tensor scores = matmul(rms_norm(x, norm_weight, 1e-5), wq);
  const Tensor probs = softmax(scores, -1);
  const Tensor row_max = max(probs, -1);

  absl::StatusOr<Trace> trace = Trace::Collect({row_max});
  if (!trace.ok()) {
    std::fprintf(stderr, "kiln demo: %s\n", trace.status().ToString().c_str());
    return 1;
  }
  std::printf("Recorded, nothing computed yet:\n%s", trace->ToText().c_str());
  std::printf("structural hash: %s\n\n", trace->StructuralHash().ToHex().c_str());

  const Bindings bindings{{seq, 4}};
  absl::StatusOr<std::vector<float>> values = row_max.to_host<float>(bindings);
  if (!values.ok()) {
    std::fprintf(stderr, "kiln demo: %s\n", values.status().ToString().c_str());
    return 1;
  }
  std::printf("realized with seq=4 -> %s\nmax probability per row:", row_max.ToString().c_str());
  for (float v : *values) std::printf(" %.4f", v);
  std::printf("\n");
  return 0;
}

}  // namespace kiln::cli
