#include "optimizer/search/factor.h"

#include <algorithm>
#include <map>
#include <random>

#include "absl/strings/str_cat.h"
#include "optimizer/search/verify.h"
#include "optimizer/tile_analysis.h"
#include "optimizer/ugraph_validate.h"

namespace kiln::search {
namespace {

using Kind = RegionOp::Kind;

bool IsInputChain(const Region& r, int op) {
  const RegionOp& o = r.ops[op];
  return o.kind == Kind::kInput || (o.kind == Kind::kPermute && r.ops[o.args[0]].kind == Kind::kInput);
}

// The region input an input chain reads.
int InputOf(const Region& r, int chain) {
  const RegionOp& o = r.ops[chain];
  return o.kind == Kind::kInput ? o.input : r.ops[o.args[0]].input;
}

int Uses(const Region& r, int op) {
  int n = 0;
  for (const RegionOp& o : r.ops) n += static_cast<int>(std::count(o.args.begin(), o.args.end(), op));
  return n;
}

int64_t Elements(const Region& r, const std::vector<int>& classes) {
  int64_t n = 1;
  for (int c : classes) n *= NominalSize(r.class_size[c]);
  return n;
}

// Matmul `op` = a (x y), its B a matmul that only it reads.
struct Nested {
  int op = -1, a = -1, x = -1, y = -1;
};

std::optional<Nested> NestedProduct(const Region& r, int op) {
  const RegionOp& o = r.ops[op];
  if (o.kind != Kind::kMatmul) return std::nullopt;
  const RegionOp& inner = r.ops[o.args[1]];
  if (inner.kind != Kind::kMatmul || Uses(r, o.args[1]) != 1) return std::nullopt;
  return Nested{op, o.args[0], inner.args[0], inner.args[1]};
}

// Builds one part from region ops, its classes the region's until Finish.
class PartBuilder {
 public:
  // `drop`: a unit class left out of every op copied (-1: none); `batch`:
  // the class it must follow where it appears.
  PartBuilder(const Region& region, int drop, int batch) : r_(region), drop_(drop), batch_(batch) {}

  int AddInput(int source, std::vector<int> classes, DType dtype, std::vector<int> layout, const Node* node) {
    RegionOp op;
    op.kind = Kind::kInput;
    op.input = static_cast<int>(part_.region.inputs.size());
    op.classes = std::move(classes);
    part_.region.inputs.push_back(node);
    part_.region.input_dtypes.push_back(dtype);
    part_.region.input_layouts.push_back(std::move(layout));
    part_.sources.push_back(source);
    return Add(std::move(op));
  }

  // Region op `op` and what it reads (once each); none where the dropped
  // class is in the way (a permute or a reduction of it, or it without the
  // batch class before it).
  std::optional<int> Copy(int op) {
    if (auto it = copied_.find(op); it != copied_.end()) return it->second;
    const RegionOp& src = r_.ops[op];
    std::optional<int> id;
    if (src.kind == Kind::kInput) {
      const bool dropped = std::find(src.classes.begin(), src.classes.end(), drop_) != src.classes.end();
      if (dropped) return std::nullopt;  // a region input keeps its shape
      const std::vector<int> layout =
          src.input < static_cast<int>(r_.input_layouts.size()) ? r_.input_layouts[src.input] : std::vector<int>();
      id = AddInput(src.input, src.classes, r_.input_dtypes[src.input], layout, r_.inputs[src.input]);
    } else {
      RegionOp copy = src;
      for (int& a : copy.args) {
        const std::optional<int> arg = Copy(a);
        if (!arg) return std::nullopt;
        a = *arg;
      }
      if (!DropAxis(copy)) return std::nullopt;
      id = Add(std::move(copy));
    }
    copied_[op] = *id;
    return id;
  }

  // Sets region op `op`'s copy (a replacement computed otherwise).
  void Replace(int op, int part_op) { copied_[op] = part_op; }

  int AddMatmul(int a, int b, std::vector<int> classes) {
    RegionOp op;
    op.kind = Kind::kMatmul;
    op.op = OpKind::kMatmul;
    op.args = {a, b};
    op.classes = std::move(classes);
    return Add(std::move(op));
  }

  // The part with `output` (an op) last: the ops it needs, in order, and
  // its classes renumbered.
  RegionPart Finish(int output, DType output_dtype) {
    RegionPart part = std::move(part_);
    std::vector<int> keep(part.region.ops.size(), 0), index(part.region.ops.size(), -1);
    keep[output] = 1;
    for (int i = output; i >= 0; --i) {
      if (keep[i]) {
        for (int a : part.region.ops[i].args) keep[a] = 1;
      }
    }
    std::vector<RegionOp> ops;
    for (int i = 0; i <= output; ++i) {
      if (!keep[i]) continue;
      index[i] = static_cast<int>(ops.size());
      RegionOp o = part.region.ops[i];
      for (int& a : o.args) a = index[a];
      ops.push_back(std::move(o));
    }
    std::map<int, int> renumber;
    std::vector<bool> reduced(r_.class_size.size(), false);
    for (const RegionOp& o : ops) {
      if (o.kind == Kind::kMatmul) reduced[ops[o.args[0]].classes.back()] = true;
      if (o.kind == Kind::kReduce || o.kind == Kind::kStableExp) {
        for (int a : o.axes) reduced[ops[o.args[0]].classes[a]] = true;
      }
    }
    for (RegionOp& o : ops) {
      for (int& c : o.classes) {
        auto [it, fresh] = renumber.try_emplace(c, static_cast<int>(part.classes.size()));
        if (fresh) {
          part.classes.push_back(c);
          part.region.class_size.push_back(r_.class_size[c]);
          part.region.class_reduced.push_back(reduced[c]);
        }
        c = it->second;
      }
    }
    part.region.ops = std::move(ops);
    part.region.output_dtype = output_dtype;
    return part;
  }

 private:
  int Add(RegionOp op) {
    part_.region.ops.push_back(std::move(op));
    return static_cast<int>(part_.region.ops.size()) - 1;
  }

  // Leaves the dropped class out of `op` (already read from the copies of
  // its args), renumbering its axes.
  bool DropAxis(RegionOp& op) const {
    auto at = std::find(op.classes.begin(), op.classes.end(), drop_);
    if (at == op.classes.end()) return true;
    const int d = static_cast<int>(at - op.classes.begin());
    if (d == 0 || op.classes[d - 1] != batch_ || op.kind == Kind::kPermute || op.mask.on()) return false;
    if (op.kind == Kind::kReduce || op.kind == Kind::kStableExp) {
      // A reduction's axes index its argument's (already dropped) axes,
      // which had the dropped one at the same place.
      for (int& a : op.axes) {
        if (a == d) return false;
        if (a > d) --a;
      }
    }
    op.classes.erase(at);
    return true;
  }

  const Region& r_;
  const int drop_, batch_;
  RegionPart part_;
  std::map<int, int> copied_;  // region op -> part op
};

// A is [h, q, k] with q a unit row axis; X [h, k, n]; Y rank 2 (no h).
bool SharedOverHeads(const Region& r, int a, int x, int y) {
  const auto& ca = r.ops[a].classes;
  const auto& cx = r.ops[x].classes;
  return ca.size() == 3 && cx.size() == 3 && r.ops[y].classes.size() == 2 && ca[0] == cx[0] &&
         r.class_size[ca[1]] == Dim(1) && !(r.class_size[ca[0]] == Dim(1));
}

}  // namespace

std::optional<FactoredRegion> FactorProducts(const Region& region) {
  // The output p (c w): c shared, w by head.
  const std::optional<Nested> back = NestedProduct(region, region.output_op());
  if (!back || !IsInputChain(region, back->x) || !IsInputChain(region, back->y)) return std::nullopt;
  const auto& cp = region.ops[back->a].classes;
  const auto& cw = region.ops[back->y].classes;
  if (cp.size() != 3 || cw.size() != 3 || region.ops[back->x].classes.size() != 2 || cw[0] != cp[0] ||
      !(region.class_size[cp[1]] == Dim(1))) {
    return std::nullopt;
  }
  const int heads = cp[0], row = cp[1];
  // a (x y) before it, with the same heads and row.
  std::optional<Nested> front;
  for (int i = 0; i < region.output_op() && !front; ++i) {
    std::optional<Nested> n = NestedProduct(region, i);
    if (!n || !IsInputChain(region, n->a) || !IsInputChain(region, n->x) || !IsInputChain(region, n->y)) continue;
    if (!SharedOverHeads(region, n->a, n->x, n->y)) continue;
    const auto& ca = region.ops[n->a].classes;
    if (ca[0] != heads || ca[1] != row) continue;
    // Worth it where a x is smaller than x y.
    const std::vector<int> t = {heads, row, region.ops[n->x].classes[2]};
    if (Elements(region, t) >= Elements(region, region.ops[region.ops[i].args[1]].classes)) continue;
    front = n;
  }
  if (!front) return std::nullopt;
  const int latent = region.ops[front->x].classes[2];
  // The parts between keep the products' 16-bit dtype (their operands are rounded to it anyway).
  const DType dtype = region.input_dtypes[InputOf(region, front->x)];
  FactoredRegion f;
  // Part 0: t = a x, [h, q, latent].
  {
    PartBuilder b(region, -1, -1);
    const std::optional<int> a = b.Copy(front->a), x = b.Copy(front->x);
    if (!a || !x) return std::nullopt;
    const int t = b.AddMatmul(*a, *x, {heads, row, latent});
    f.parts.push_back(b.Finish(t, dtype));
  }
  // Part 1: the region between, its unit row axis dropped, with t for a x
  // and p c, [h, c's last], as its output.
  {
    PartBuilder b(region, row, heads);
    const int t = b.AddInput(-1, {heads, latent}, dtype, {}, nullptr);
    const std::optional<int> y = b.Copy(front->y);
    if (!y) return std::nullopt;
    const std::vector<int>& cy = region.ops[front->y].classes;
    if (cy[0] != latent) return std::nullopt;
    b.Replace(front->op, b.AddMatmul(t, *y, {heads, cy[1]}));
    const std::optional<int> p = b.Copy(back->a), c = b.Copy(back->x);
    if (!p || !c) return std::nullopt;
    const int out = b.AddMatmul(*p, *c, {heads, region.ops[back->x].classes[1]});
    f.parts.push_back(b.Finish(out, dtype));
  }
  // Part 2: the output, (p c) w.
  {
    PartBuilder b(region, -1, -1);
    const int pc = b.AddInput(-2, {heads, row, region.ops[back->x].classes[1]}, dtype, {}, nullptr);
    const std::optional<int> w = b.Copy(back->y);
    if (!w) return std::nullopt;
    const int out = b.AddMatmul(pc, *w, region.ops[region.output_op()].classes);
    f.parts.push_back(b.Finish(out, region.output_dtype));
  }
  // The front's product must be the only way the region reaches a and x
  // (else the middle part would read them too): the middle reads t, y and
  // the region's other inputs only.
  for (int s : f.parts[1].sources) {
    if (s >= 0 && (s == InputOf(region, front->a) || s == InputOf(region, front->x))) return std::nullopt;
  }
  return f;
}

absl::StatusOr<bool> VerifyFactoring(const Region& region, const FactoredRegion& factored, int tests,
                                     uint64_t seed) {
  // Small sizes, different by class, so that a confused axis shows.
  std::vector<int64_t> sizes;
  for (size_t c = 0; c < region.class_size.size(); ++c) {
    const Dim& d = region.class_size[c];
    const int64_t small = 2 + static_cast<int64_t>(c % 4);
    sizes.push_back(d == Dim(1) ? 1 : d.is_concrete() ? std::min(d.value(), small) : small);
  }
  const auto run_parts = [&](const std::vector<FieldArray>& inputs,
                              const FieldAlgebra& alg) -> absl::StatusOr<FieldArray> {
    std::vector<FieldArray> outputs;
    for (const RegionPart& part : factored.parts) {
      std::vector<int64_t> part_sizes;
      for (int c : part.classes) part_sizes.push_back(sizes[c]);
      std::vector<FieldArray> in;
      for (size_t j = 0; j < part.sources.size(); ++j) {
        const int s = part.sources[j];
        FieldArray a = s >= 0 ? inputs[s] : outputs[-1 - s];
        a.shape = part.region.InputShape(static_cast<int>(j), part_sizes);  // the same elements, unit axes aside
        int64_t n = 1;
        for (int64_t e : a.shape) n *= e;
        if (n != static_cast<int64_t>(a.data.size())) return FieldArray();  // the parts do not fit together
        in.push_back(std::move(a));
      }
      absl::StatusOr<FieldArray> out = EvaluateRegion(part.region, part_sizes, in, alg);
      if (!out.ok()) return out.status();
      outputs.push_back(*std::move(out));
    }
    return outputs.back();
  };
  std::mt19937_64 rng(seed);
  for (int t = 0; t < tests; ++t) {
    absl::StatusOr<bool> same = FieldTest(region, sizes, rng, run_parts);
    if (!same.ok() || !*same) return same;
  }
  return true;
}

namespace {

// ComposeParts over the parts' sources (RegionPart::sources, a list a part).
absl::StatusOr<ugraph::KernelGraph> ComposeGraphs(const Region& region, const std::vector<std::vector<int>>& sources,
                                                  const std::vector<ugraph::KernelGraph>& graphs) {
  if (graphs.size() != sources.size()) return absl::InternalError("compose: a graph per part");
  ugraph::KernelGraph out;
  const int n = static_cast<int>(region.inputs.size());
  out.tensors.resize(n + 1);
  std::vector<int> part_output(graphs.size(), -1);
  for (size_t p = 0; p < graphs.size(); ++p) {
    const std::vector<int>& part_sources = sources[p];
    const ugraph::KernelGraph& g = graphs[p];
    const int inputs = static_cast<int>(part_sources.size());
    if (static_cast<int>(g.tensors.size()) != inputs + 1) return absl::InternalError("compose: a part's tensors");
    std::vector<int> rename(inputs + 1);
    for (int j = 0; j < inputs; ++j) {
      const int s = part_sources[j];
      rename[j] = s >= 0 ? s : part_output[-1 - s];
      if (s >= 0) {
        out.tensors[s] = g.tensors[j];
        out.tensors[s].id = s;
      }
    }
    const bool last = p + 1 == graphs.size();
    ugraph::DTensor result = g.tensors[inputs];
    result.id = last ? n : static_cast<int>(out.tensors.size());
    result.role = last ? ugraph::TensorRole::kOutput : ugraph::TensorRole::kIntermediate;
    if (last) {
      out.tensors[n] = result;
    } else {
      out.tensors.push_back(result);
    }
    rename[inputs] = part_output[p] = result.id;
    for (ugraph::Kernel kernel : g.kernels) {
      for (ugraph::InputIterator& it : kernel.block.inputs) {
        const int j = it.view.tensor;
        it.view.tensor = rename[j];
        const Shape& held = out.tensors[rename[j]].shape;
        if (held == it.view.source_shape) continue;
        ugraph::ViewStep step;
        step.kind = ugraph::ViewStep::Kind::kReshape;
        step.shape = it.view.source_shape;
        it.view.steps.insert(it.view.steps.begin(), std::move(step));
        it.view.source_shape = held;
      }
      for (ugraph::OutputSaver& o : kernel.block.outputs) o.tensor = rename[o.tensor];
      for (int& t : kernel.inputs) t = rename[t];
      for (int& t : kernel.outputs) t = rename[t];
      out.kernels.push_back(std::move(kernel));
    }
  }
  return out;
}

// The dtype a part's one product rounds its operands to (a tiled kernel's
// matmul op, or a matmul kernel's), or none.
std::optional<DType> ProductDtype(const ugraph::BlockGraph& b) {
  if (b.kind == ugraph::BlockKind::kMatmul) return b.tiles.dtype;
  if (b.kind != ugraph::BlockKind::kTiled) return std::nullopt;
  std::optional<DType> dtype;
  for (const ugraph::TileOp& op : b.tile_ops) {
    if (op.kind != ugraph::TileOp::Kind::kMatmul) continue;
    if (dtype) return std::nullopt;
    dtype = op.dtype;
  }
  return dtype;
}

}  // namespace

absl::StatusOr<ugraph::KernelGraph> ComposeParts(const Region& region, const FactoredRegion& factored,
                                                 const std::vector<ugraph::KernelGraph>& graphs) {
  std::vector<std::vector<int>> sources;
  for (const RegionPart& part : factored.parts) sources.push_back(part.sources);
  return ComposeGraphs(region, sources, graphs);
}

std::optional<ugraph::KernelGraph> FuseRowProduct(const Region& region, const FactoredRegion& factored,
                                                  const std::vector<ugraph::KernelGraph>& graphs) {
  using ugraph::TileAxis;
  using ugraph::TileOp;
  if (factored.parts.size() != 3 || graphs.size() != 3) return std::nullopt;
  const RegionPart& mid = factored.parts[1];
  const RegionPart& last = factored.parts[2];
  const ugraph::KernelGraph& g1 = graphs[1];
  const ugraph::KernelGraph& g2 = graphs[2];
  if (g1.kernels.size() != 1 || g2.kernels.size() != 1) return std::nullopt;
  const ugraph::BlockGraph& b1 = g1.kernels[0].block;
  const int mid_inputs = static_cast<int>(mid.sources.size());
  if (b1.kind != ugraph::BlockKind::kTiled || b1.outputs.size() != 1 || b1.outputs[0].tensor != mid_inputs) {
    return std::nullopt;
  }
  const absl::StatusOr<std::vector<ugraph::TileInfo>> tiles = ugraph::AnalyzeTiles(b1);
  if (!tiles.ok()) return std::nullopt;
  const int pc = b1.outputs[0].value;
  const ugraph::TileInfo& rows = (*tiles)[pc];
  if (rows.axes.size() != 2 || rows.axes[1].source != TileAxis::Source::kFull) return std::nullopt;
  // The last part reads p c (another part's output) and w, a region input.
  int w = -1;
  for (size_t j = 0; j < last.sources.size(); ++j) {
    if (last.sources[j] < 0) continue;
    if (w >= 0) return std::nullopt;
    w = static_cast<int>(j);
  }
  if (w < 0) return std::nullopt;
  const ugraph::BlockGraph& b2 = g2.kernels[0].block;
  const std::optional<DType> dtype = ProductDtype(b2);
  const DType stored = g1.tensors[mid_inputs].dtype;
  if (!dtype || (stored != *dtype && stored != DType::kF32)) return std::nullopt;
  const ugraph::InputIterator* w_it = nullptr;
  for (const ugraph::InputIterator& it : b2.inputs) {
    if (it.view.tensor == w) w_it = &it;
  }
  if (w_it == nullptr) return std::nullopt;
  const Shape& ws = w_it->view.shape;
  const Shape& out_shape = g2.tensors[last.sources.size()].shape;
  if (ws.rank() != 3 || !(ws[0] == rows.axes[0].extent) || !(ws[1] == Dim(rows.axes[1].size)) ||
      !ws[2].is_concrete() || out_shape.rank() != 3 || !(out_shape[0] == ws[0]) || !(out_shape[1] == Dim(1)) ||
      !(out_shape[2] == ws[2])) {
    return std::nullopt;
  }
  // The fused part's graph: the middle part's inputs, w, the region's output.
  ugraph::KernelGraph fused;
  fused.tensors.assign(g1.tensors.begin(), g1.tensors.begin() + mid_inputs);
  ugraph::DTensor w_tensor = g2.tensors[w];
  w_tensor.id = mid_inputs;
  fused.tensors.push_back(w_tensor);
  ugraph::DTensor output = g2.tensors[last.sources.size()];
  output.id = mid_inputs + 1;
  fused.tensors.push_back(output);
  ugraph::Kernel kernel = g1.kernels[0];
  kernel.inputs.push_back(mid_inputs);
  kernel.outputs = {mid_inputs + 1};
  ugraph::BlockGraph& b = kernel.block;
  ugraph::InputIterator it;
  it.view = w_it->view;
  it.view.tensor = mid_inputs;
  const bool on_grid = rows.axes[0].source == TileAxis::Source::kGrid;
  if (on_grid) it.imap[rows.axes[0].grid_axis] = 0;
  b.inputs.push_back(std::move(it));
  TileOp load;
  load.kind = TileOp::Kind::kInput;
  load.input = static_cast<int>(b.inputs.size()) - 1;
  b.tile_ops.push_back(load);
  TileOp product;
  product.kind = TileOp::Kind::kRowMatmul;
  product.args = {pc, static_cast<int>(b.tile_ops.size()) - 1};
  product.dtype = *dtype;
  b.tile_ops.push_back(product);
  ugraph::OutputSaver saver;
  saver.tensor = mid_inputs + 1;
  saver.value = static_cast<int>(b.tile_ops.size()) - 1;
  if (on_grid) saver.omap[rows.axes[0].grid_axis] = 0;
  b.outputs = {saver};
  fused.kernels.push_back(std::move(kernel));
  std::vector<int> fused_sources = mid.sources;
  fused_sources.push_back(last.sources[w]);
  absl::StatusOr<ugraph::KernelGraph> composed =
      ComposeGraphs(region, {factored.parts[0].sources, fused_sources}, {graphs[0], fused});
  if (!composed.ok() || !ugraph::Validate(*composed).ok()) return std::nullopt;
  return *std::move(composed);
}

}  // namespace kiln::search
