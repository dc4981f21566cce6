// kiln: the command-line tool. `kiln <command> [flags]`.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "examples/commands.h"

namespace {

constexpr char kUsage[] =
    "kiln <command> [flags]\n"
    "\n"
    "commands:\n"
    "  generate --model PATH [--tokenizer PATH] --prompt TEXT [--steps N]\n"
    "           [--temperature T] [--top-p P] [--seed S] [--device cpu|cuda]\n"
    "           [--dtype f32|f16|bf16] [--context N] [--chat [--system TEXT]]\n"
    "           [--superoptimize [--search-log]]\n"
    "           stream generated text to stdout; tokens/s to stderr\n"
    "  chat --model PATH [--system TEXT] [--max-tokens N] (and generate's flags)\n"
    "           an interactive chat with the model's template; /reset, Ctrl-D to leave\n"
    "  info MODEL\n"
    "           architecture, shapes, dtypes, tokenizer, template, bytes; can kiln run it\n"
    "  bench generate --model PATH [--steps N] [--repeat R]\n"
    "           prefill and decode tokens/s on the CPU, and where the time goes\n"
    "  bench decode [--shape 1b|8b|qwen3-8b] [--context N] [--steps N] [--json F]\n"
    "           [--prefill N] [--kernels N] [--cuda_graphs] [--replay_steps] [--superoptimize]:\n"
    "           decode ms/token (GPU + host), launches, the floor, the slowest kernels\n"
    "  bench gpu [--steps N] [--superoptimize [--search-log]]\n"
    "           GPU runtime: decoder-layer cold/warm latency, 1B-shaped decode ms/token\n"
    "  bench fused [--cases a,b] [--out fused.json] [--budget S] [--time-top N]\n"
    "           the fused-op suite (peers.py's cases) on the GPU: kernel us, search time\n"
    "           cold and warm; JSON for ../shared/bench/compare.py\n"
    "  superoptimize [--cases a,b] [--dot] [--source] [--budget S] [--time-top N]\n"
    "           per region: candidates enumerated/pruned/verified/timed, time per phase,\n"
    "           the chosen uGraph (text, DOT, CUDA source) and its speed against the default lowering\n"
    "  demo     record a small trace, print it and its hash, then realize it\n"
    "\n"
    "Flags may be spelled with - or _ (--top-p, --top_p).\n";

// absl flags are named with underscores; accept the dashed spelling too.
std::vector<std::string> NormalizeFlagNames(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    std::string& a = args[i];
    if (a == "--") break;
    if (a.rfind("--", 0) != 0) continue;
    const size_t end = std::min(a.find('='), a.size());
    for (size_t j = 2; j < end; ++j) {
      if (a[j] == '-') a[j] = '_';
    }
  }
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  std::vector<std::string> normalized = NormalizeFlagNames(argc, argv);
  std::vector<char*> pointers;
  for (std::string& a : normalized) pointers.push_back(a.data());
  std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(pointers.size()), pointers.data());
  if (positional.size() < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string command = positional[1];
  const std::vector<std::string> args(positional.begin() + 2, positional.end());
  if (command == "generate") return kiln::cli::RunGenerate(args);
  if (command == "chat") return kiln::cli::RunChat(args);
  if (command == "info") return kiln::cli::RunInfo(args);
  if (command == "bench") return kiln::cli::RunBench(args);
  if (command == "demo") return kiln::cli::RunDemo(args);
  if (command == "superoptimize") return kiln::cli::RunSuperoptimize(args);
  std::fprintf(stderr, "kiln: unknown command '%s'\n\n%s", command.c_str(), kUsage);
  return 2;
}
