// CUDA C++ source -> CUBIN for one GPU architecture, with NVRTC.
#ifndef KILN_JIT_NVRTC_COMPILER_H_
#define KILN_JIT_NVRTC_COMPILER_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "jit/nvrtc_api.h"

namespace kiln::jit {

// Everything that decides how a kernel is compiled. Flags() is the one place
// they become NVRTC options, and the kernel cache keys on Flags(), so a new
// option here changes the key by itself.
struct CompileOptions {
  // A real architecture: NVRTC emits a CUBIN only for "sm_XY" targets.
  // DeviceInfo::arch() for the device at hand ("sm_90a" on Hopper); without
  // a GPU, whatever the caller targets.
  std::string arch = "sm_90a";
  std::string cxx_standard = "c++17";
  // Off by default: --use_fast_math flushes denormals and approximates
  // division and transcendentals, which the CPU reference does not.
  bool fast_math = false;
  // -lineinfo: source lines in the CUBIN for profilers; no speed cost.
  bool line_info = false;
  // -DNAME=VALUE (or -DNAME when the value is empty).
  std::vector<std::pair<std::string, std::string>> defines;
  // -I directories, for callers whose source includes files; kiln's
  // generated code is self-contained.
  std::vector<std::string> include_paths;

  std::vector<std::string> Flags() const;
  // InvalidArgument unless `arch` looks like sm_<digits>[letter].
  absl::Status Validate() const;
};

// Compiles `source` (one translation unit; kernels should be extern "C" so
// their names are predictable) to a CUBIN for options.arch. A source error
// returns InvalidArgument whose message holds the flags and NVRTC's program
// log. `program_name` is the file name the log reports.
absl::StatusOr<std::string> CompileToCubin(const NvrtcApi& nvrtc, absl::string_view source,
                                           const CompileOptions& options,
                                           absl::string_view program_name = "kiln_kernel.cu");

// "13.0".
std::string NvrtcVersionString(const NvrtcApi& nvrtc);

}  // namespace kiln::jit

#endif  // KILN_JIT_NVRTC_COMPILER_H_
