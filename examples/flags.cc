#include "examples/flags.h"

#include <algorithm>
#include <cstdio>

#include "absl/flags/flag.h"
#include "jit/options.h"
#include "optimizer/cuda_executor.h"
#include "optimizer/search_trace.h"
#include "tensor/executor.h"

ABSL_FLAG(std::string, model, "",
          "checkpoint: a Hugging Face directory (config.json + .safetensors), a .gguf file, or "
          "a llama2.c .bin file");
ABSL_FLAG(std::string, tokenizer, "",
          "tokenizer.json, tokenizer.model, a .gguf or a llama2.c tokenizer.bin (default: the "
          "model's own)");
ABSL_FLAG(std::string, dtype, "",
          "f32, f16 or bf16: the weights' dtype (default: as stored; f32 for quantized GGUF)");
ABSL_FLAG(std::string, quantize, "",
          "q8_0, q4_0 or q4_k: quantize the projections and the classifier at load, kept packed (a GGUF's "
          "quantized matrices are kept packed as stored)");
ABSL_FLAG(int, context, 4096,
          "the longest context (KV cache positions), capped at the model's; 0 = the model's");
ABSL_FLAG(bool, chat, false, "generate: render --prompt as a user turn of the chat template");
ABSL_FLAG(std::string, system, "", "chat: a system prompt");
ABSL_FLAG(int, max_tokens, 1024, "chat: the longest reply, in tokens");
ABSL_FLAG(std::string, prompt, "", "text to start from");
ABSL_FLAG(int, steps, 256, "positions to generate up to, BOS and prompt included");
ABSL_FLAG(double, temperature, 1.0, "0 = greedy; higher = more random");
ABSL_FLAG(double, top_p, 0.9, "nucleus sampling threshold in (0, 1); 1 = off");
ABSL_FLAG(int64_t, seed, -1, "random seed for sampling (-1: from the clock)");
ABSL_FLAG(std::string, device, "cpu", "cpu or cuda");
ABSL_FLAG(int, repeat, 5, "bench: timed repetitions");
ABSL_FLAG(bool, superoptimize, false,
          "cuda: search each new trace's fusible regions for faster fused kernels (cached on disk)");
ABSL_FLAG(bool, search_log, false, "with --superoptimize: print each region's search report to stderr");
ABSL_FLAG(bool, replay_steps, true,
          "cuda: record the decode step's trace once and rerun it for every token "
          "(false: record each token's step anew)");
ABSL_FLAG(bool, pipelined_products, true,
          "cuda: products of 128 or more rows (prefill) on the pipelined tensor-core kernel "
          "(false: one 64 x 64 tile a block)");
ABSL_FLAG(int64_t, decode_columns, kiln::lowering::LowerOptions().decode_columns,
          "cuda: adjacent weight columns each thread of a decode product sums, reading the activations once "
          "for all (1 to 8)");
ABSL_FLAG(bool, cuda_graphs, true,
          "cuda: replay each repeated step's kernels from a CUDA graph (false: launch kernel by kernel)");

namespace kiln::cli {

int64_t DecodeColumns() {
  const int64_t asked = absl::GetFlag(FLAGS_decode_columns);
  const int64_t columns = std::clamp<int64_t>(asked, 1, 8);
  if (columns != asked) std::fprintf(stderr, "kiln: --decode_columns is 1 to 8; using %lld\n", static_cast<long long>(columns));
  return columns;
}

Device ChooseDevice() {
  absl::StatusOr<Device> device = Device::Parse(absl::GetFlag(FLAGS_device));
  if (!device.ok()) {
    std::fprintf(stderr, "kiln: %s; using the CPU\n", device.status().ToString().c_str());
    return Device::Cpu();
  }
  if (device->type == DeviceType::kCuda) {
    if (absl::Status s = InitCuda(); !s.ok()) {
      std::fprintf(stderr, "kiln: %s\n", std::string(s.message()).c_str());
      return Device::Cpu();
    }
    GetCudaExecutor()->set_graphs(absl::GetFlag(FLAGS_cuda_graphs));
    GetCudaExecutor()->set_pipelined_products(absl::GetFlag(FLAGS_pipelined_products));
    GetCudaExecutor()->set_decode_columns(DecodeColumns());
    if (absl::GetFlag(FLAGS_superoptimize)) {
      TraceSearchOptions options;
      const jit::CacheOptions cache = jit::CacheOptions::FromEnvironment();
      if (cache.disk) options.search.cache_dir = cache.directory;
      options.log = absl::GetFlag(FLAGS_search_log);
      EnableSuperoptimizer(*GetCudaExecutor(), options);
    }
  }
  return *device;
}

}  // namespace kiln::cli
