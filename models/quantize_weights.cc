#include "models/quantize_weights.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/quant.h"

namespace kiln::models {

absl::Status QuantizeLinearWeights(LlamaWeights& weights, bool tied_embeddings, QuantFormat format) {
  if (!CanQuantize(format)) {
    return absl::UnimplementedError(absl::StrCat("kiln quantizes weights to Q8_0, Q4_0 or Q4_K, not ", QuantName(format)));
  }
  std::vector<std::pair<std::string, Tensor*>> matrices;
  for (size_t i = 0; i < weights.layers.size(); ++i) {
    LlamaLayerWeights& l = weights.layers[i];
    const std::string p = absl::StrCat("layers.", i, ".");
    for (auto& [name, t] : std::vector<std::pair<const char*, Tensor*>>{{"wq", &l.wq},
                                                                       {"wk", &l.wk},
                                                                       {"wv", &l.wv},
                                                                       {"wo", &l.wo},
                                                                       {"w_gate", &l.w_gate},
                                                                       {"w_up", &l.w_up},
                                                                       {"w_down", &l.w_down}}) {
      matrices.push_back({p + name, t});
    }
  }
  matrices.push_back({"classifier", &weights.classifier});
  for (auto& [name, t] : matrices) {
    if (!t->defined() || AsPackedWeight(*t).has_value()) continue;
    absl::StatusOr<Tensor> packed = QuantizeWeight(*t, format);
    if (!packed.ok()) {
      return absl::Status(packed.status().code(), absl::StrCat("quantizing weight ", name, " (", t->ToString(),
                                                               ") to ", QuantName(format), ": ",
                                                               packed.status().message()));
    }
    *t = *std::move(packed);
  }
  if (tied_embeddings) weights.embedding = weights.classifier;
  return absl::OkStatus();
}

}  // namespace kiln::models
