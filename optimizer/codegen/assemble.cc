#include "optimizer/codegen/assemble.h"

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "optimizer/tiles/embedded.h"

namespace kiln::codegen {
namespace {

const char* FindEmbedded(absl::string_view name) {
  for (const tiles::EmbeddedFile& f : tiles::EmbeddedFiles()) {
    if (name == f.name) return f.text;
  }
  return nullptr;
}

void Append(absl::string_view text, std::set<std::string>& included, std::string& out) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    absl::string_view rest = absl::StripLeadingAsciiWhitespace(line);
    if (absl::ConsumePrefix(&rest, "#include \"") && absl::ConsumeSuffix(&rest, "\"")) {
      const char* body = FindEmbedded(rest);
      if (body != nullptr) {
        if (included.insert(std::string(rest)).second) Append(body, included, out);
        continue;
      }
    }
    if (absl::StartsWith(rest, "#pragma once")) continue;
    absl::StrAppend(&out, line, "\n");
  }
}

}  // namespace

std::string AssembleSource(absl::string_view kernel_source) {
  std::string out;
  std::set<std::string> included;
  Append(kernel_source, included, out);
  return out;
}

}  // namespace kiln::codegen
