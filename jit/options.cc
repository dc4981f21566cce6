// The one place in jit/ that reads environment variables.
#include "jit/options.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace kiln::jit {
namespace {

std::string GetEnv(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

bool IsFalse(absl::string_view value) {
  const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(value));
  return lower == "0" || lower == "off" || lower == "false" || lower == "no";
}

}  // namespace

LibraryOptions LibraryOptions::FromEnvironment() {
  LibraryOptions options;
  options.cuda_library = GetEnv("KILN_CUDA_LIBRARY");
  options.nvrtc_library = GetEnv("KILN_NVRTC_LIBRARY");
  return options;
}

CacheOptions CacheOptions::FromEnvironment() {
  CacheOptions options;
  options.disk = !IsFalse(GetEnv("KILN_CACHE"));
  options.directory = GetEnv("KILN_CACHE_DIR");
  if (options.directory.empty()) {
    const std::string home = GetEnv("HOME");
    if (!home.empty()) options.directory = absl::StrCat(home, "/.cache/kiln");
  }
  return options;
}

}  // namespace kiln::jit
