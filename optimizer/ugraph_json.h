// JSON serialization of the uGraph (for the on-disk cache of chosen graphs,
// and for inspection). ToJson / FromJson round-trip exactly.
#ifndef KILN_OPTIMIZER_UGRAPH_JSON_H_
#define KILN_OPTIMIZER_UGRAPH_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "optimizer/ugraph.h"

namespace kiln::ugraph {

std::string ToJson(const KernelGraph& graph);
// InvalidArgument naming the offending field for malformed input.
absl::StatusOr<KernelGraph> FromJson(absl::string_view text);

}  // namespace kiln::ugraph

#endif  // KILN_OPTIMIZER_UGRAPH_JSON_H_
