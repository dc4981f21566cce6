// The full translation unit NVRTC compiles: the device tile library (from
// the embedded copies) followed by a generated kernel.
#ifndef KILN_OPTIMIZER_CODEGEN_ASSEMBLE_H_
#define KILN_OPTIMIZER_CODEGEN_ASSEMBLE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace kiln::codegen {

// Inlines every `#include "kiln/..."` of `kernel_source` (and of the
// included files, each once), so the result needs no headers.
std::string AssembleSource(absl::string_view kernel_source);

}  // namespace kiln::codegen

#endif  // KILN_OPTIMIZER_CODEGEN_ASSEMBLE_H_
