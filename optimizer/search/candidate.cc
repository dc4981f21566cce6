#include "optimizer/search/candidate.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace kiln::search {

std::string Schedule::ToString(const Region& region) const {
  std::string out;
  for (size_t c = 0; c < map.size(); ++c) {
    absl::StrAppend(&out, c ? " " : "", "c", c, "(", region.class_size[c].ToString(), "):");
    switch (map[c]) {
      case Map::kFull: absl::StrAppend(&out, "full"); break;
      case Map::kGrid: absl::StrAppend(&out, "grid", grid_axis[c], "/", tile[c]); break;
      case Map::kLoop: absl::StrAppend(&out, "loop/", tile[c]); break;
    }
  }
  if (loop_split > 1) absl::StrAppend(&out, " split/", loop_split);
  if (threads != 256) absl::StrAppend(&out, " threads/", threads);
  return out;
}

std::vector<int> IteratorClasses(const Region& region, int op_index) {
  const std::vector<int>& own = region.ops[op_index].classes;
  std::vector<int> widest = own;
  if (own.size() < 2) return widest;
  for (const RegionOp& op : region.ops) {
    if (op.kind != RegionOp::Kind::kMatmul || op.classes.size() < own.size()) continue;
    if (std::find(op.args.begin(), op.args.end(), op_index) == op.args.end()) continue;
    // The operand's batch dims line up with the product's last ones.
    const size_t lead = op.classes.size() - own.size();
    std::vector<int> mine(op.classes.begin(), op.classes.begin() + static_cast<std::ptrdiff_t>(lead));
    for (size_t d = 0; d + 2 < own.size(); ++d) {
      const int c = own[d], product = op.classes[lead + d];
      const bool broadcast = region.class_size[c] == Dim(1) && !(region.class_size[product] == Dim(1));
      mine.push_back(broadcast ? product : c);
    }
    mine.insert(mine.end(), own.end() - 2, own.end());
    if (mine.size() > widest.size() || (mine.size() == widest.size() && widest == own)) widest = std::move(mine);
  }
  return widest;
}

absl::StatusOr<ugraph::KernelGraph> Instantiate(const Region& region, const Candidate& candidate,
                                                const std::vector<Dim>& sizes) {
  using ugraph::DTensor;
  const Schedule& s = candidate.schedule;
  ugraph::KernelGraph graph;
  auto shape_of = [&](int op) {
    Shape shape;
    for (int c : region.ops[op].classes) shape.push_back(sizes[c]);
    return shape;
  };
  for (size_t i = 0; i < region.inputs.size(); ++i) {
    DTensor t;
    t.id = static_cast<int>(i);
    t.dtype = region.input_dtypes[i];
    t.role = ugraph::TensorRole::kInput;
    graph.tensors.push_back(t);
  }
  for (const RegionOp& op : region.ops) {
    if (op.kind != RegionOp::Kind::kInput) continue;
    ugraph::DTensor& t = graph.tensors[op.input];
    t.shape = shape_of(&op - region.ops.data());
    // A realized input that is not row-major keeps its layout, at these sizes.
    const std::vector<int>& layout = op.input < static_cast<int>(region.input_layouts.size())
                                         ? region.input_layouts[op.input]
                                         : std::vector<int>();
    if (layout.empty() || !t.shape.is_concrete()) continue;
    t.strides.assign(layout.size(), 0);
    int64_t stride = 1;
    for (size_t k = layout.size(); k-- > 0;) {
      t.strides[layout[k]] = stride;
      stride *= t.shape[layout[k]].value();
    }
  }
  DTensor out;
  out.id = static_cast<int>(graph.tensors.size());
  out.dtype = region.output_dtype;
  out.role = ugraph::TensorRole::kOutput;
  out.shape = shape_of(region.output_op());
  graph.tensors.push_back(out);

  ugraph::Kernel kernel;
  ugraph::BlockGraph& b = kernel.block;
  b.kind = ugraph::BlockKind::kTiled;
  b.threads = s.threads;
  b.loop_split = s.loop_split;
  for (size_t c = 0; c < s.map.size(); ++c) {
    if (s.map[c] == Schedule::Map::kGrid) b.grid[s.grid_axis[c]] = {Shape({sizes[c]}), s.tile[c]};
    if (s.map[c] == Schedule::Map::kLoop) b.forloop = {Shape({sizes[c]}), s.tile[c]};
  }
  for (int op_index : candidate.iterator_ops) {
    const RegionOp& op = region.ops[op_index];
    ugraph::InputIterator it;
    const RegionOp& source = op.kind == RegionOp::Kind::kPermute ? region.ops[op.args[0]] : op;
    if (source.kind != RegionOp::Kind::kInput) return absl::InternalError("search: an iterator over a computed op");
    it.view.tensor = source.input;
    it.view.source_shape = graph.tensors[source.input].shape;
    it.view.shape = shape_of(op_index);
    if (op.kind == RegionOp::Kind::kPermute) {
      ugraph::ViewStep step;
      step.kind = ugraph::ViewStep::Kind::kPermute;
      step.perm = op.axes;
      step.shape = it.view.shape;
      it.view.steps.push_back(std::move(step));
    }
    // An operand that a product broadcasts over its batch dims is read
    // through an expand to them.
    const std::vector<int> classes = IteratorClasses(region, op_index);
    if (classes != op.classes) {
      ugraph::ViewStep step;
      step.kind = ugraph::ViewStep::Kind::kExpand;
      for (int c : classes) step.shape.push_back(sizes[c]);
      it.view.shape = step.shape;
      it.view.steps.push_back(std::move(step));
    }
    for (size_t d = 0; d < classes.size(); ++d) {
      const int c = classes[d];
      if (sizes[c] == Dim(1)) continue;
      if (s.map[c] == Schedule::Map::kGrid) it.imap[s.grid_axis[c]] = static_cast<int>(d);
      if (s.map[c] == Schedule::Map::kLoop) it.fmap = static_cast<int>(d);
    }
    b.inputs.push_back(std::move(it));
    if (std::find(kernel.inputs.begin(), kernel.inputs.end(), source.input) == kernel.inputs.end()) {
      kernel.inputs.push_back(source.input);
    }
  }
  for (const CandidateOp& cop : candidate.ops) {
    ugraph::TileOp op = cop.op;
    if (!cop.inverse_of_classes.empty()) {
      int64_t n = 1;
      for (int c : cop.inverse_of_classes) {
        if (!sizes[c].is_concrete()) return absl::UnimplementedError("search: a mean over a symbolic dim");
        n *= sizes[c].value();
      }
      op.value = 1.0 / static_cast<double>(n);
    }
    b.tile_ops.push_back(std::move(op));
  }
  ugraph::OutputSaver saver;
  saver.tensor = out.id;
  saver.value = candidate.output;
  const RegionOp& result = region.ops[region.output_op()];
  for (size_t d = 0; d < result.classes.size(); ++d) {
    const int c = result.classes[d];
    if (s.map[c] == Schedule::Map::kGrid && !(sizes[c] == Dim(1))) saver.omap[s.grid_axis[c]] = static_cast<int>(d);
  }
  b.outputs.push_back(saver);
  kernel.outputs.push_back(out.id);
  graph.kernels.push_back(std::move(kernel));
  return graph;
}

}  // namespace kiln::search
