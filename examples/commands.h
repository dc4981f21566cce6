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
// `kiln bench generate`: tokens/s of prefill and decode, and where time goes.
int RunBench(const std::vector<std::string>& args);

}  // namespace kiln::cli

#endif  // KILN_EXAMPLES_COMMANDS_H_
