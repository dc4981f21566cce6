#include "optimizer/codegen/tiled_gen.h"

namespace kiln::codegen {

absl::Status GenerateTiled(Emitter& e, const ugraph::BlockGraph& block) {
  return absl::UnimplementedError("codegen: tiled blocks are being written");
}

}  // namespace kiln::codegen
