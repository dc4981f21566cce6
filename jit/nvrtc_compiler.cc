#include "jit/nvrtc_compiler.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "jit/cuda_status.h"

namespace kiln::jit {
namespace {

// Destroys the program on every path out of CompileToCubin.
class ProgramGuard {
 public:
  ProgramGuard(const NvrtcApi& nvrtc, nvrtcProgram program) : nvrtc_(nvrtc), program_(program) {}
  ~ProgramGuard() { KILN_NVRTC(nvrtc_, nvrtcDestroyProgram(&program_)).IgnoreError(); }
  ProgramGuard(const ProgramGuard&) = delete;
  ProgramGuard& operator=(const ProgramGuard&) = delete;

 private:
  const NvrtcApi& nvrtc_;
  nvrtcProgram program_;
};

std::string ProgramLog(const NvrtcApi& nvrtc, nvrtcProgram program) {
  size_t size = 0;
  if (!KILN_NVRTC(nvrtc, nvrtcGetProgramLogSize(program, &size)).ok() || size <= 1) return "";
  std::string log(size, '\0');
  if (!KILN_NVRTC(nvrtc, nvrtcGetProgramLog(program, log.data())).ok()) return "";
  log.resize(size - 1);  // the size counts the terminating NUL
  return log;
}

}  // namespace

std::vector<std::string> CompileOptions::Flags() const {
  std::vector<std::string> flags = {
      absl::StrCat("--gpu-architecture=", arch),
      absl::StrCat("--std=", cxx_standard),
      // Generated helpers need no __device__ on every function.
      "-default-device",
  };
  if (fast_math) flags.push_back("--use_fast_math");
  if (line_info) flags.push_back("-lineinfo");
  for (const auto& [name, value] : defines) {
    flags.push_back(value.empty() ? absl::StrCat("-D", name) : absl::StrCat("-D", name, "=", value));
  }
  for (const std::string& path : include_paths) flags.push_back(absl::StrCat("-I", path));
  return flags;
}

absl::Status CompileOptions::Validate() const {
  absl::string_view rest = arch;
  bool ok = absl::ConsumePrefix(&rest, "sm_") && !rest.empty() && absl::ascii_isdigit(rest[0]);
  while (ok && !rest.empty() && absl::ascii_isdigit(rest[0])) rest.remove_prefix(1);
  ok = ok && (rest.empty() || (rest.size() == 1 && absl::ascii_islower(rest[0])));
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CompileOptions.arch '", arch,
        "' is not a real GPU architecture: expected sm_<version>[suffix], e.g. sm_90a or sm_80 "
        "(NVRTC makes a CUBIN only for a real architecture)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> CompileToCubin(const NvrtcApi& nvrtc, absl::string_view source,
                                           const CompileOptions& options,
                                           absl::string_view program_name) {
  KILN_JIT_RETURN_IF_ERROR(options.Validate());
  const std::string text(source);  // NVRTC wants NUL-terminated strings
  const std::string name(program_name);
  nvrtcProgram program = nullptr;
  KILN_JIT_RETURN_IF_ERROR(KILN_NVRTC(
      nvrtc, nvrtcCreateProgram(&program, text.c_str(), name.c_str(), 0, nullptr, nullptr)));
  ProgramGuard guard(nvrtc, program);

  const std::vector<std::string> flags = options.Flags();
  std::vector<const char*> argv;
  argv.reserve(flags.size());
  for (const std::string& flag : flags) argv.push_back(flag.c_str());
  const nvrtcResult result =
      nvrtc.nvrtcCompileProgram(program, static_cast<int>(argv.size()), argv.data());
  if (result != kNvrtcSuccess) {
    return NvrtcError(nvrtc, result,
                      absl::StrCat("nvrtcCompileProgram(", name, ", ", absl::StrJoin(flags, " "),
                                   ")"),
                      ProgramLog(nvrtc, program));
  }
  size_t size = 0;
  KILN_JIT_RETURN_IF_ERROR(KILN_NVRTC(nvrtc, nvrtcGetCUBINSize(program, &size)));
  if (size == 0) {
    return absl::InternalError(
        absl::StrCat("NVRTC compiled ", name, " for ", options.arch, " but produced no CUBIN"));
  }
  std::string cubin(size, '\0');
  KILN_JIT_RETURN_IF_ERROR(KILN_NVRTC(nvrtc, nvrtcGetCUBIN(program, cubin.data())));
  return cubin;
}

std::string NvrtcVersionString(const NvrtcApi& nvrtc) {
  return absl::StrCat(nvrtc.version_major, ".", nvrtc.version_minor);
}

}  // namespace kiln::jit
