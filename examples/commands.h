// The subcommands of the `kiln` tool. Each returns the process exit code.
#ifndef KILN_EXAMPLES_COMMANDS_H_
#define KILN_EXAMPLES_COMMANDS_H_

#include <string>
#include <vector>

namespace kiln::cli {

// Records a small transformer-style trace, prints it, realizes it.
int RunDemo(const std::vector<std::string>& args);
// Streams generated text to stdout, statistics to stderr.
int RunGenerate(const std::vector<std::string>& args);
// An interactive chat in the terminal.
int RunChat(const std::vector<std::string>& args);
// What a checkpoint holds and whether kiln can run it.
int RunInfo(const std::vector<std::string>& args);
// `kiln bench generate|gpu`: generation speed on the CPU; GPU runtime latencies.
int RunBench(const std::vector<std::string>& args);
int BenchGpu();
// `kiln bench decode`: whole-model decode ms/token against the bandwidth floor.
int BenchDecode();
// `kiln bench fused`: the fused-op suite on the GPU, JSON for compare.py.
int BenchFused();
// Searches each fused case's region and explains what happened.
int RunSuperoptimize(const std::vector<std::string>& args);

}  // namespace kiln::cli

#endif  // KILN_EXAMPLES_COMMANDS_H_
