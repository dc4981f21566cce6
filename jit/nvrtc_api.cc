#include "jit/nvrtc_api.h"

#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "jit/cuda_status.h"
#include "jit/dynamic_library.h"

namespace kiln::jit {
namespace {

std::vector<std::string> BindNvrtc(const DynamicLibrary& lib, NvrtcApi& api) {
  std::vector<std::string> missing;
  auto bind = [&](const char* symbol, auto*& fn) {
    if (!lib.Bind(symbol, fn)) missing.push_back(symbol);
  };
  bind("nvrtcVersion", api.nvrtcVersion);
  bind("nvrtcGetErrorString", api.nvrtcGetErrorString);
  bind("nvrtcCreateProgram", api.nvrtcCreateProgram);
  bind("nvrtcDestroyProgram", api.nvrtcDestroyProgram);
  bind("nvrtcCompileProgram", api.nvrtcCompileProgram);
  bind("nvrtcGetProgramLogSize", api.nvrtcGetProgramLogSize);
  bind("nvrtcGetProgramLog", api.nvrtcGetProgramLog);
  bind("nvrtcGetCUBINSize", api.nvrtcGetCUBINSize);  // NVRTC 11.1+
  bind("nvrtcGetCUBIN", api.nvrtcGetCUBIN);
  return missing;
}

absl::StatusOr<const NvrtcApi*> Open(const LibraryOptions& options) {
  const std::vector<std::string> candidates =
      options.nvrtc_library.empty()
          ? std::vector<std::string>{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                                     "/usr/local/cuda/lib64/libnvrtc.so"}
          : std::vector<std::string>{options.nvrtc_library};
  absl::StatusOr<DynamicLibrary> lib = DynamicLibrary::OpenFirst(candidates);
  if (!lib.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "no NVRTC (the CUDA runtime compiler): ", lib.status().message(),
        "; kiln cannot compile GPU kernels and runs on the CPU instead (install the CUDA "
        "toolkit's NVRTC, or set KILN_NVRTC_LIBRARY to libnvrtc's path)"));
  }
  auto api = std::make_unique<NvrtcApi>();
  api->library = lib->name();
  const std::vector<std::string> missing = BindNvrtc(*lib, *api);
  if (!missing.empty()) {
    return absl::UnavailableError(absl::StrCat(
        "NVRTC ", api->library, " is too old: it lacks ", absl::StrJoin(missing, ", "),
        " (kiln needs NVRTC 12 or newer); kiln runs on the CPU instead"));
  }
  if (absl::Status status =
          KILN_NVRTC(*api, nvrtcVersion(&api->version_major, &api->version_minor));
      !status.ok()) {
    return absl::UnavailableError(
        absl::StrCat(api->library, ": ", status.message(), "; kiln runs on the CPU instead"));
  }
  return api.release();  // kept for the life of the process, like the library
}

}  // namespace

absl::StatusOr<const NvrtcApi*> LoadNvrtc(const LibraryOptions& options) {
  static absl::Mutex mu(absl::kConstInit);
  static auto* loaded = new absl::flat_hash_map<std::string, absl::StatusOr<const NvrtcApi*>>();
  absl::MutexLock lock(&mu);
  auto it = loaded->find(options.nvrtc_library);
  if (it == loaded->end()) it = loaded->emplace(options.nvrtc_library, Open(options)).first;
  return it->second;
}

}  // namespace kiln::jit
