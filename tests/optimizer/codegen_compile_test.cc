// Every kernel the default lowering emits for the conformance suite compiles
// with NVRTC (which runs without a GPU): one shape per op and dtype, since
// shapes only change constants in the generated code.
#include "absl/strings/str_replace.h"
#include "jit/nvrtc_compiler.h"
#include "optimizer/codegen/assemble.h"
#include "optimizer/codegen/generate.h"
#include "optimizer/lower.h"
#include "optimizer/ugraph_json.h"
#include "optimizer/ugraph_validate.h"
#include "tests/optimizer/conformance_cases.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

class CodegenCompile : public ::testing::TestWithParam<testing::ConformanceCase> {};

TEST_P(CodegenCompile, EveryKernelCompiles) {
  const testing::ConformanceCase& c = GetParam();
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  if (!nvrtc.ok()) GTEST_SKIP() << "NVRTC unavailable: " << nvrtc.status();
  const std::vector<Tensor> outputs = c.build(testing::MakeInputs(c, 1, Device::Cpu()));
  absl::StatusOr<Trace> trace = Trace::Collect(outputs);
  ASSERT_TRUE(trace.ok()) << trace.status();
  // Products also as LowerOptions::pipelined_products lowers them, and
  // decode products with three columns a thread (the last group's columns
  // past N clamped).
  const bool product = c.name.rfind("matmul/", 0) == 0;
  const bool decoded_product = c.name.find("_product") != std::string::npos;
  struct Variant {
    const char* name;
    bool pipelined;
    int64_t decode_columns;
  };
  std::vector<Variant> variants = {{"default lowering", false, 1}};
  if (product) variants.push_back({"pipelined products", true, 1});
  if (product || decoded_product) variants.push_back({"three decode columns a thread", false, 3});
  for (const Variant& variant : variants) {
    SCOPED_TRACE(variant.name);
    const bool pipelined = variant.pipelined;
    lowering::LowerOptions options;
    options.pipelined_products = pipelined;
    options.decode_columns = variant.decode_columns;
    absl::StatusOr<lowering::LoweredTrace> lowered = lowering::LowerTrace(*trace, options);
    ASSERT_TRUE(lowered.ok()) << lowered.status();
    ASSERT_TRUE(ugraph::Validate(lowered->graph).ok())
        << ugraph::Validate(lowered->graph) << "\n" << ugraph::ToText(lowered->graph);
    // The graph survives a JSON round trip unchanged.
    absl::StatusOr<ugraph::KernelGraph> back = ugraph::FromJson(ugraph::ToJson(lowered->graph));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(ugraph::ToJson(*back), ugraph::ToJson(lowered->graph));
    bool double_buffered = false, decoded_in_loads = false;
    for (size_t k = 0; k < lowered->graph.kernels.size(); ++k) {
      absl::StatusOr<codegen::KernelSource> source =
          codegen::GenerateKernel(lowered->graph, static_cast<int>(k));
      ASSERT_TRUE(source.ok()) << source.status();
      double_buffered |= source->source.find("As[2][") != std::string::npos;
      decoded_in_loads |= lowered->graph.kernels[k].block.kind == ugraph::BlockKind::kMatmul &&
                          source->source.find("dequant") != std::string::npos;
      // Launched early (jit::LaunchConfig::early), it waits for the kernel
      // before it ahead of everything else.
      EXPECT_THAT(source->source, ::testing::HasSubstr("kiln_kernel(const Params p) {\n  wait_for_prior_grid();"));
      absl::StatusOr<std::string> cubin = jit::CompileToCubin(
          **nvrtc, codegen::AssembleSource(source->source), jit::CompileOptions());
      ASSERT_TRUE(cubin.ok()) << "kernel " << k << ": " << cubin.status() << "\n"
                              << source->source << "\n"
                              << ugraph::ToText(lowered->graph);
      EXPECT_FALSE(cubin->empty());
    }
    // The prefill-sized half-precision cases take the pipelined kernel.
    const bool half = c.name.find("/f16/") != std::string::npos || c.name.find("/bf16/") != std::string::npos;
    EXPECT_EQ(double_buffered, pipelined && half && c.name.find("/prefill_") != std::string::npos);
    // A product of quantized weights decodes their blocks as it loads them.
    EXPECT_EQ(decoded_in_loads, c.name.find("dequantize/") == 0 && c.name.find("_product") != std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(Conformance, CodegenCompile,
                         ::testing::ValuesIn(testing::ConformanceCases(/*every_shape=*/false)),
                         testing::TestName);

}  // namespace
}  // namespace kiln
