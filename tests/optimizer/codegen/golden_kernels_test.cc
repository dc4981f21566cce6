// Golden kernels: the CUDA source the code generator emits for every case of
// `kiln bench fused` (the kernels the search chooses by its cost model, as on
// a machine without a GPU) and for a decode step's default lowering, compared
// with tests/golden/kernels/<case>.cu. A refactor of the code generator
// keeps them identical; a change that means to alter them regenerates them
// (scripts/update_golden_kernels.sh) and says why in its commit.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "models/llama.h"
#include "models/random_weights.h"
#include "ops/ops.h"
#include "optimizer/codegen/generate.h"
#include "optimizer/lower.h"
#include "optimizer/search/fused_cases.h"
#include "optimizer/search/superoptimize.h"

namespace kiln {
namespace {

const std::string kGoldenDir = std::string(KILN_SOURCE_DIR) + "/tests/golden/kernels/";
constexpr char kDecodeCase[] = "decode_step_1b_layer";

// Every kernel of `graph` as generated, each after a line of its launch facts.
std::string KernelsText(const ugraph::KernelGraph& graph) {
  std::string out;
  for (size_t k = 0; k < graph.kernels.size(); ++k) {
    absl::StatusOr<codegen::KernelSource> s = codegen::GenerateKernel(graph, static_cast<int>(k));
    if (!s.ok()) {
      absl::StrAppend(&out, "// kernel ", k, ": no generated source (", s.status().ToString(), ")\n");
      continue;
    }
    absl::StrAppend(&out, "// kernel ", k, ": ", s->threads, " threads, ", s->dynamic_shared_bytes,
                    " bytes of dynamic shared memory, ", s->workspace_bytes_per_point,
                    " workspace bytes per point\n", s->source);
  }
  return out;
}

// The search's choice for a fused case, by the cost model alone (no timing,
// no disk cache, a budget it never reaches: the same on every machine).
absl::StatusOr<std::string> FusedCaseKernels(const std::string& name) {
  absl::StatusOr<search::FusedCase> c = search::MakeFusedCase(name, Device::Cpu());
  if (!c.ok()) return c.status();
  search::SearchOptions options;
  options.budget_seconds = 600;
  options.cache_dir = "";
  absl::StatusOr<search::SearchResult> r = search::Superoptimize(c->region, options);
  if (!r.ok()) return r.status();
  if (!r->graph) return absl::NotFoundError(absl::StrCat(name, ": the search chose no graph"));
  return KernelsText(*r->graph);
}

// One decode step of a one-layer Llama-3.2-1B-shaped model (bf16, a 1024-token
// vocabulary) at a symbolic position, lowered by the default rules with the
// KV cache written in place, as the CUDA executor runs it.
absl::StatusOr<std::string> DecodeStepKernels() {
  models::LlamaConfig c = models::Llama1BShapedConfig(2048);
  c.n_layers = 1;
  c.vocab_size = 1024;
  absl::StatusOr<models::LlamaWeights> weights = models::RandomLlamaWeights(c, 1, Device::Cpu());
  if (!weights.ok()) return weights.status();
  // merge_qkv: as a model on the GPU runs.
  absl::StatusOr<models::LlamaModel> model = models::LlamaModel::Create(c, *weights, /*merge_qkv=*/true);
  if (!model.ok()) return model.status();
  absl::StatusOr<models::KvCache> cache = model->NewCache();
  if (!cache.ok()) return cache.status();
  const Symbol pos = model->PositionSymbol(1);
  std::vector<Tensor> outputs = {model->Forward(Tensor::FromHost<int32_t>({7}, {1}), Dim(pos), *cache)};
  outputs.insert(outputs.end(), cache->k.begin(), cache->k.end());
  outputs.insert(outputs.end(), cache->v.begin(), cache->v.end());
  absl::StatusOr<Trace> trace = Trace::Collect(outputs);
  if (!trace.ok()) return trace.status();
  lowering::LowerOptions options;
  for (const Node* n : trace->nodes()) {
    if (!n->is_realized() && n->op == OpKind::kSliceUpdate && n->inputs[0]->is_realized()) {
      options.in_place_updates.insert(n);
    }
  }
  absl::StatusOr<lowering::LoweredTrace> lowered = lowering::LowerTrace(*trace, options);
  if (!lowered.ok()) return lowered.status();
  return KernelsText(lowered->graph);
}

// The first differing lines, with a few lines around them.
std::string Diff(const std::string& want, const std::string& got) {
  const std::vector<std::string> a = absl::StrSplit(want, '\n');
  const std::vector<std::string> b = absl::StrSplit(got, '\n');
  size_t first = 0;
  while (first < a.size() && first < b.size() && a[first] == b[first]) ++first;
  size_t tail = 0;
  while (tail < a.size() - first && tail < b.size() - first && a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) {
    ++tail;
  }
  std::string out = absl::StrCat("@@ line ", first + 1, ": golden ", a.size() - first - tail, " lines, now ",
                                 b.size() - first - tail, " lines @@\n");
  const size_t context = first >= 3 ? first - 3 : 0;
  for (size_t i = context; i < first; ++i) absl::StrAppend(&out, "  ", a[i], "\n");
  const size_t shown = 40;
  for (size_t i = first; i < a.size() - tail && i < first + shown; ++i) absl::StrAppend(&out, "- ", a[i], "\n");
  for (size_t i = first; i < b.size() - tail && i < first + shown; ++i) absl::StrAppend(&out, "+ ", b[i], "\n");
  return out;
}

std::vector<std::string> GoldenCases() {
  std::vector<std::string> cases = search::FusedCaseNames();
  cases.push_back(kDecodeCase);
  return cases;
}

class GoldenKernels : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenKernels, EmittedSourceIsTheGolden) {
  const std::string& name = GetParam();
  absl::StatusOr<std::string> got = name == kDecodeCase ? DecodeStepKernels() : FusedCaseKernels(name);
  ASSERT_TRUE(got.ok()) << got.status();
  const std::string path = kGoldenDir + name + ".cu";
  if (const char* update = std::getenv("KILN_UPDATE_GOLDEN"); update != nullptr && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << *got;
    GTEST_SKIP() << "wrote " << path;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << path << " is missing: run scripts/update_golden_kernels.sh";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_TRUE(want.str() == *got) << name << ": the emitted kernels differ from " << path
                                  << " (scripts/update_golden_kernels.sh regenerates it)\n"
                                  << Diff(want.str(), *got);
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenKernels, ::testing::ValuesIn(GoldenCases()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace kiln
