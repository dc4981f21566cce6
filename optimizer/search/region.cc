#include "optimizer/search/region.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ops/ops.h"
#include "optimizer/search/op_expr.h"

namespace kiln::search {
namespace {

bool IsSearchableUnary(OpKind op) { return IsUnary(op); }
bool IsSearchableBinary(OpKind op) { return IsArithmetic(op); }

bool IsFloatCast(const Node* n) {
  return n->op == OpKind::kCast && IsFloating(n->dtype) && IsFloating(n->inputs[0]->dtype);
}

// A scalar constant, possibly expanded (full()).
const Node* ScalarConstant(const Node* n) {
  while (n->op == OpKind::kExpand || IsFloatCast(n)) n = n->inputs[0].get();
  return n->op == OpKind::kConstant && n->shape.rank() == 0 ? n : nullptr;
}

// x where `n` is exp(x - max(x, axes, keepdim=true)) (softmax's stabilized
// exponential; casts between f32 and 16-bit floats on the way allowed), with
// the max's axes and the nodes between x and the exp (the casts, the
// subtraction, the max); else nullptr.
const Node* StabilizedArgument(const Node* n, std::vector<int>* axes, std::vector<const Node*>* between) {
  if (n->op != OpKind::kExp || n->is_realized()) return nullptr;
  between->clear();
  const Node* sub = n->inputs[0].get();
  while (IsFloatCast(sub) && !sub->is_realized()) {
    between->push_back(sub);
    sub = sub->inputs[0].get();
  }
  if (sub->op != OpKind::kSub || sub->is_realized()) return nullptr;
  const Node* x = sub->inputs[0].get();
  const Node* m = sub->inputs[1].get();
  if (m->op != OpKind::kReduceMax || m->is_realized() || m->inputs[0].get() != x) return nullptr;
  const auto& attrs = std::get<ReduceAttrs>(m->attrs);
  if (!attrs.keepdim) return nullptr;
  axes->assign(attrs.axes.begin(), attrs.axes.end());
  std::sort(axes->begin(), axes->end());
  between->push_back(sub);
  between->push_back(m);
  return x;
}

// The iota under `n` (casts to i32 or i64, and reshapes that add size-1
// axes, on the way) and the one axis of `n` it runs along; else nullptr.
const Node* PositionIota(const Node* n, int* axis, std::vector<const Node*>* between) {
  const Shape& shape = n->shape;
  const auto exact_int = [](DType d) { return d == DType::kI32 || d == DType::kI64; };
  while ((n->op == OpKind::kReshape || (n->op == OpKind::kCast && exact_int(n->dtype))) && !n->is_realized()) {
    between->push_back(n);
    n = n->inputs[0].get();
  }
  if (n->op != OpKind::kIota || n->is_realized() || n->shape.rank() != 1 || n->shape[0] == Dim(1) ||
      !exact_int(n->dtype)) {
    return nullptr;
  }
  between->push_back(n);
  *axis = -1;
  for (int d = 0; d < shape.rank(); ++d) {
    if (shape[d] == Dim(1)) continue;
    if (*axis >= 0 || !(shape[d] == n->shape[0])) return nullptr;
    *axis = d;
  }
  return *axis >= 0 ? n : nullptr;
}

// The scores under `n` when `n` is attention's causal mask, where(query_pos
// >= key_pos, scores, -inf) with positions iotas of step 1 (kiln's
// attention: ops/nn.cc), with the mask on the scores' axes and the nodes
// between; else nullptr.
const Node* CausalMasked(const Node* n, ugraph::CausalMask* mask, std::vector<const Node*>* between) {
  // (Scores the mask broadcasts would leave the mask's axes out of theirs.)
  if (n->op != OpKind::kWhere || n->is_realized() || !(n->inputs[1]->shape == n->shape)) return nullptr;
  const Node* cond = n->inputs[0].get();
  const Node* fill = ScalarConstant(n->inputs[2].get());
  if (fill == nullptr || n->inputs[2]->is_realized() || cond->is_realized()) return nullptr;
  const double value = std::get<ConstantAttrs>(fill->attrs).value;
  if (!(std::isinf(value) && value < 0)) return nullptr;
  if (cond->op != OpKind::kGe && cond->op != OpKind::kLe) return nullptr;
  const int q = cond->op == OpKind::kGe ? 0 : 1;  // le(key_pos, query_pos) reads the same
  std::vector<const Node*> nodes = {n, cond};
  for (const Node* c = n->inputs[2].get(); c != fill; c = c->inputs[0].get()) nodes.push_back(c);
  nodes.push_back(fill);
  int row = -1, col = -1;
  const Node* rows = PositionIota(cond->inputs[q].get(), &row, &nodes);
  const Node* cols = PositionIota(cond->inputs[1 - q].get(), &col, &nodes);
  if (rows == nullptr || cols == nullptr) return nullptr;
  const auto& ra = std::get<IotaAttrs>(rows->attrs);
  const auto& ca = std::get<IotaAttrs>(cols->attrs);
  if (ra.step != 1 || ca.step != 1 || ra.offset != std::floor(ra.offset) || ca.offset != std::floor(ca.offset)) {
    return nullptr;
  }
  // Aligned right in the where's result.
  const int rank = n->shape.rank();
  row += rank - cond->inputs[q]->shape.rank();
  col += rank - cond->inputs[1 - q]->shape.rank();
  if (row == col || row < 0 || col < 0) return nullptr;
  // query r sees key c where r + start_q >= c + start_k: the shift past
  // the last query seeing the last key.
  const Dim shift = (ra.start - ca.start) - (n->shape[col] - n->shape[row]) +
                    static_cast<int64_t>(ra.offset - ca.offset);
  if (!shift.is_concrete()) return nullptr;
  mask->row = row;
  mask->col = col;
  mask->shift = shift.value();
  *between = std::move(nodes);
  return n->inputs[1].get();
}

// The product under `n` when `n` is a product scaled by a scalar constant
// (attention's scores, q k^T * 1/sqrt(d); float casts between allowed),
// with the constant and the nodes between; else nullptr.
const Node* ScaledProduct(const Node* n, const Node** constant, std::vector<const Node*>* between) {
  if (n->op != OpKind::kMul) return nullptr;
  for (int k = 0; k < 2; ++k) {
    const Node* c = ScalarConstant(n->inputs[k].get());
    if (c == nullptr || n->inputs[k]->is_realized()) continue;
    const Node* p = n->inputs[1 - k].get();
    std::vector<const Node*> on_the_way;
    while (IsFloatCast(p) && !p->is_realized()) {
      on_the_way.push_back(p);
      p = p->inputs[0].get();
    }
    if (p->op != OpKind::kMatmul || p->is_realized()) return nullptr;
    on_the_way.push_back(p);
    *constant = c;
    *between = std::move(on_the_way);
    return p;
  }
  return nullptr;
}

// The axes of a buffer from the slowest- to the fastest-varying (by
// stride; size-1 axes where they stand), or empty when that is row-major.
std::vector<int> MemoryOrder(const TensorData& data) {
  std::vector<int> order(data.sizes.size());
  for (size_t d = 0; d < order.size(); ++d) order[d] = static_cast<int>(d);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (data.sizes[a] == 1 || data.sizes[b] == 1) return false;
    return data.strides[a] > data.strides[b];
  });
  for (size_t d = 0; d < order.size(); ++d) {
    if (order[d] != static_cast<int>(d)) return order;
  }
  return {};
}

// The mask as a bool tensor broadcast against `shape` (its axes at
// mask.row and mask.col, 1 elsewhere).
Tensor CausalKeeps(const ugraph::CausalMask& mask, const Shape& shape, Device device) {
  const Dim& rows = shape[mask.row];
  const Dim& cols = shape[mask.col];
  const std::vector<Dim> ones(shape.rank(), Dim(1));
  Shape row_shape(ones), col_shape(ones);
  row_shape[mask.row] = rows;
  col_shape[mask.col] = cols;
  // Query r sees key c where r + offset >= c; positions count from 0 on
  // the side that keeps them non-negative.
  const Dim offset = cols - rows + mask.shift;
  const bool ahead = offset.min_value() >= 0;
  const Tensor query_pos = reshape(iota(rows, ahead ? offset : Dim(0), 1, DType::kI32, device), row_shape);
  const Tensor key_pos = reshape(iota(cols, ahead ? Dim(0) : Dim(0) - offset, 1, DType::kI32, device), col_shape);
  return ge(query_pos, key_pos);
}

// Union-find over dim classes.
class Classes {
 public:
  int Make(const Dim& size) {
    parent_.push_back(static_cast<int>(parent_.size()));
    size_.push_back(size);
    return parent_.back();
  }
  int Find(int c) {
    while (parent_[c] != c) c = parent_[c] = parent_[parent_[c]];
    return c;
  }
  void Union(int a, int b) { parent_[Find(a)] = Find(b); }
  const Dim& size(int c) const { return size_[c]; }
  int count() const { return static_cast<int>(parent_.size()); }

 private:
  std::vector<int> parent_;
  std::vector<Dim> size_;
};

class Extractor {
 public:
  explicit Extractor(const std::function<bool(const Node*)>& is_boundary) : is_boundary_(is_boundary) {}

  absl::StatusOr<Region> Run(const Node* output) {
    if (!Searchable(output)) {
      return absl::UnimplementedError(absl::StrCat("search: ", OpName(output->op), " is not searched"));
    }
    output_ = output;
    Visit(output);
    bool worth = false;
    for (const RegionOp& op : region_.ops) {
      worth |= op.kind == RegionOp::Kind::kMatmul || op.kind == RegionOp::Kind::kReduce;
    }
    if (!worth) return absl::UnimplementedError("search: a region without matmul or reduction");
    // Canonical class numbering, in order of first appearance.
    absl::flat_hash_map<int, int> renumber;
    for (RegionOp& op : region_.ops) {
      for (int& c : op.classes) {
        const int root = classes_.Find(c);
        auto [it, fresh] = renumber.try_emplace(root, static_cast<int>(renumber.size()));
        if (fresh) {
          region_.class_size.push_back(classes_.size(root));
          region_.class_reduced.push_back(ReducedRoot(root));
        }
        c = it->second;
      }
    }
    region_.output = output;
    region_.output_dtype = output->dtype;
    return std::move(region_);
  }

 private:
  bool ReducedRoot(int root) {
    for (int c : reduced_) {
      if (classes_.Find(c) == root) return true;
    }
    return false;
  }

  bool Searchable(const Node* n) const {
    if (n->is_realized()) return false;
    if (IsFloatCast(n) || ScalarConstant(n)) return true;
    return IsSearchableUnary(n->op) || IsSearchableBinary(n->op) || n->op == OpKind::kMatmul ||
           n->op == OpKind::kReduceSum || n->op == OpKind::kReduceMean || n->op == OpKind::kPermute;
  }

  int Add(RegionOp op) {
    region_.ops.push_back(std::move(op));
    return static_cast<int>(region_.ops.size()) - 1;
  }

  std::vector<int> FreshClasses(const Shape& shape) {
    std::vector<int> c;
    for (const Dim& d : shape) c.push_back(classes_.Make(d));
    return c;
  }

  int Visit(const Node* n) {
    if (auto it = done_.find(n); it != done_.end()) return it->second;
    const int id = Build(n);
    done_[n] = id;
    if (region_.ops[id].kind != RegionOp::Kind::kInput || n->op == OpKind::kCast) region_.nodes.push_back(n);
    return id;
  }

  int Build(const Node* n) {
    if (const Node* c = ScalarConstant(n); c && !n->is_realized()) {
      RegionOp op;
      op.kind = RegionOp::Kind::kConstant;
      op.value = std::get<ConstantAttrs>(c->attrs).value;
      op.classes = FreshClasses(Shape());
      return Add(std::move(op));
    }
    if (n != output_ && (is_boundary_(n) || !Searchable(n))) return AddInput(n);
    if (n->is_realized()) return AddInput(n);
    if (IsFloatCast(n)) return Visit(n->inputs[0].get());
    std::vector<int> axes;
    std::vector<const Node*> between;
    const Node* x = StabilizedArgument(n, &axes, &between);
    // The nodes between belong to the region (the search's runtime path
    // claims them; one read outside would keep x out of it), unless one is
    // a boundary: its value is needed on its own.
    for (const Node* b : between) x = x && !is_boundary_(b) ? x : nullptr;
    if (x) {
      region_.nodes.insert(region_.nodes.end(), between.begin(), between.end());
      RegionOp op;
      op.kind = RegionOp::Kind::kStableExp;
      op.op = OpKind::kExp;
      if (const Node* scores = MaskedScores(x, axes, &op.mask)) x = scores;
      op.args = {Visit(x)};
      op.axes = std::move(axes);
      op.classes = region_.ops[op.args[0]].classes;
      for (int a : op.axes) reduced_.push_back(op.classes[a]);
      return Add(std::move(op));
    }
    if (int id = ScaledProductOp(n); id >= 0) return id;
    std::vector<int> args;
    for (const auto& in : n->inputs) args.push_back(Visit(in.get()));
    RegionOp op;
    op.args = args;
    op.op = n->op;
    if (IsUnary(n->op)) {
      op.kind = RegionOp::Kind::kUnary;
      op.classes = region_.ops[args[0]].classes;
    } else if (IsArithmetic(n->op)) {
      op.kind = RegionOp::Kind::kBinary;
      op.classes = Broadcast(region_.ops[args[0]], region_.ops[args[1]]);
    } else if (n->op == OpKind::kMatmul) {
      op.kind = RegionOp::Kind::kMatmul;
      op.classes = MatmulClasses(region_.ops[args[0]], region_.ops[args[1]]);
    } else if (n->op == OpKind::kPermute) {
      op.kind = RegionOp::Kind::kPermute;
      const auto& perm = std::get<PermuteAttrs>(n->attrs).perm;
      op.axes.assign(perm.begin(), perm.end());
      for (int p : op.axes) op.classes.push_back(region_.ops[args[0]].classes[p]);
    } else {
      op.kind = RegionOp::Kind::kReduce;
      const auto& attrs = std::get<ReduceAttrs>(n->attrs);
      op.axes.assign(attrs.axes.begin(), attrs.axes.end());
      std::sort(op.axes.begin(), op.axes.end());
      op.keepdim = attrs.keepdim;
      const std::vector<int>& in = region_.ops[args[0]].classes;
      for (int a = 0; a < static_cast<int>(in.size()); ++a) {
        const bool reduced = std::find(op.axes.begin(), op.axes.end(), a) != op.axes.end();
        if (reduced) reduced_.push_back(in[a]);
        if (!reduced) op.classes.push_back(in[a]);
        else if (op.keepdim) op.classes.push_back(classes_.Make(Dim(1)));
      }
    }
    return Add(std::move(op));
  }

  // The scores under `x` when it is a causal mask whose keys are the
  // softmax's one axis and whose nodes are no boundaries (they join the
  // region); else nullptr, and `mask` is left off.
  const Node* MaskedScores(const Node* x, const std::vector<int>& axes, ugraph::CausalMask* mask) {
    std::vector<const Node*> between;
    ugraph::CausalMask m;
    const Node* scores = CausalMasked(x, &m, &between);
    if (scores == nullptr || axes != std::vector<int>{m.col} || !Claim(between)) return nullptr;
    *mask = m;
    return scores;
  }

  // Takes `between` (the nodes a recognized pattern folds into one region
  // op) into the region, unless one is a boundary or already has an op of
  // its own: its value is needed by itself.
  bool Claim(const std::vector<const Node*>& between) {
    for (const Node* b : between) {
      if (is_boundary_(b) || done_.contains(b)) return false;
    }
    region_.nodes.insert(region_.nodes.end(), between.begin(), between.end());
    return true;
  }

  // A product scaled by a constant, (a b) c, as (a c) b: the scale becomes
  // part of reading an operand (a prologue the search does not build), not
  // an op on the product the search must place. The left operand takes it:
  // its rows are the output's (attention's queries, read once per block
  // before the loop over the keys; an activation, not a weight). Scaling
  // the smaller operand instead put it on the keys of grouped prefill
  // (group x queries rows against fewer keys), where the search found no
  // kernel. Exact in real arithmetic; the scaled operand is rounded to the
  // product's dtype, as every operand of a product is. -1 where `n` is not
  // one, or one of the nodes between is a boundary.
  int ScaledProductOp(const Node* n) {
    const Node* constant = nullptr;
    std::vector<const Node*> between;
    const Node* product = ScaledProduct(n, &constant, &between);
    if (product == nullptr || !Claim(between)) return -1;
    int a = Visit(product->inputs[0].get());
    const int b = Visit(product->inputs[1].get());
    RegionOp c;
    c.kind = RegionOp::Kind::kConstant;
    c.value = std::get<ConstantAttrs>(constant->attrs).value;
    c.classes = FreshClasses(Shape());
    const int c_id = Add(std::move(c));
    RegionOp mul;
    mul.kind = RegionOp::Kind::kBinary;
    mul.op = OpKind::kMul;
    mul.args = {a, c_id};
    mul.classes = region_.ops[a].classes;
    a = Add(std::move(mul));
    RegionOp op;
    op.kind = RegionOp::Kind::kMatmul;
    op.op = OpKind::kMatmul;
    op.args = {a, b};
    op.classes = MatmulClasses(region_.ops[a], region_.ops[b]);
    return Add(std::move(op));
  }

  int AddInput(const Node* n) {
    RegionOp op;
    op.kind = RegionOp::Kind::kInput;
    op.input = static_cast<int>(region_.inputs.size());
    region_.inputs.push_back(n);
    region_.input_dtypes.push_back(n->dtype);
    region_.input_layouts.push_back(n->is_realized() ? MemoryOrder(n->data) : std::vector<int>());
    op.classes = FreshClasses(n->shape);
    return Add(std::move(op));
  }

  std::vector<int> Broadcast(const RegionOp& a, const RegionOp& b) {
    const size_t rank = std::max(a.classes.size(), b.classes.size());
    std::vector<int> out(rank);
    for (size_t d = 0; d < rank; ++d) {
      const int x = d + a.classes.size() >= rank ? a.classes[d + a.classes.size() - rank] : -1;
      const int y = d + b.classes.size() >= rank ? b.classes[d + b.classes.size() - rank] : -1;
      const bool x_unit = x < 0 || classes_.size(classes_.Find(x)) == Dim(1);
      const bool y_unit = y < 0 || classes_.size(classes_.Find(y)) == Dim(1);
      if (!x_unit && !y_unit) classes_.Union(x, y);
      out[d] = x_unit ? (y >= 0 ? y : x) : x;
    }
    return out;
  }

  std::vector<int> MatmulClasses(const RegionOp& a, const RegionOp& b) {
    const size_t ra = a.classes.size(), rb = b.classes.size();
    classes_.Union(a.classes[ra - 1], b.classes[rb - 2]);
    reduced_.push_back(a.classes[ra - 1]);
    RegionOp batch_a, batch_b;
    batch_a.classes.assign(a.classes.begin(), a.classes.end() - 2);
    batch_b.classes.assign(b.classes.begin(), b.classes.end() - 2);
    std::vector<int> out = Broadcast(batch_a, batch_b);
    out.push_back(a.classes[ra - 2]);
    out.push_back(b.classes[rb - 1]);
    return out;
  }

  const std::function<bool(const Node*)>& is_boundary_;
  const Node* output_ = nullptr;
  Region region_;
  Classes classes_;
  std::vector<int> reduced_;
  absl::flat_hash_map<const Node*, int> done_;
};

}  // namespace

ExprId StableExpExpr(ExprPool& pool, ExprId x, const ugraph::CausalMask& mask) {
  const ExprId e = pool.Exp(x);
  // The mask: 1 where kept, 0 elsewhere; an input no region has (inputs and
  // atoms are numbered from 0).
  return mask.on() ? pool.Mul(pool.Input(1 << 24), e) : e;
}

int64_t NominalSize(const Dim& d) { return d.is_concrete() ? d.value() : d.max_value(); }

std::vector<int64_t> Region::Shape(int op, const std::vector<int64_t>& sizes) const {
  std::vector<int64_t> shape;
  for (int c : ops[op].classes) shape.push_back(sizes[c]);
  return shape;
}

std::vector<int64_t> Region::InputShape(int input, const std::vector<int64_t>& sizes) const {
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == RegionOp::Kind::kInput && ops[i].input == input) return Shape(static_cast<int>(i), sizes);
  }
  return {};
}

std::string Region::ToString() const {
  std::string out;
  for (size_t i = 0; i < ops.size(); ++i) {
    const RegionOp& op = ops[i];
    absl::StrAppend(&out, "r", i, " = ");
    switch (op.kind) {
      case RegionOp::Kind::kInput: absl::StrAppend(&out, "input #", op.input); break;
      case RegionOp::Kind::kConstant: absl::StrAppend(&out, "const ", op.value); break;
      case RegionOp::Kind::kPermute: absl::StrAppend(&out, "permute"); break;
      case RegionOp::Kind::kStableExp: absl::StrAppend(&out, "stable_exp"); break;
      default: absl::StrAppend(&out, OpName(op.op)); break;
    }
    for (int a : op.args) absl::StrAppend(&out, " r", a);
    if (!op.axes.empty()) absl::StrAppend(&out, " axes [", absl::StrJoin(op.axes, ","), "]");
    if (op.mask.on()) absl::StrAppend(&out, " causal ", op.mask.row, ">=", op.mask.col, " shift ", op.mask.shift);
    absl::StrAppend(&out, "  dims [");
    for (size_t d = 0; d < op.classes.size(); ++d) {
      absl::StrAppend(&out, d ? "," : "", "c", op.classes[d], "=", class_size[op.classes[d]].ToString());
    }
    absl::StrAppend(&out, "]\n");
  }
  return out;
}

absl::StatusOr<Region> ExtractRegion(const Node* output,
                                     const std::function<bool(const Node*)>& is_boundary) {
  return Extractor(is_boundary).Run(output);
}

Tensor ReplayRegion(const Region& region, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> v(region.ops.size());
  const Device device = inputs.empty() ? Device::Cpu() : inputs[0].device();
  for (size_t i = 0; i < region.ops.size(); ++i) {
    const RegionOp& op = region.ops[i];
    auto arg = [&](int k) -> const Tensor& { return v[op.args[k]]; };
    switch (op.kind) {
      case RegionOp::Kind::kInput: v[i] = inputs[op.input]; break;
      case RegionOp::Kind::kConstant: v[i] = scalar(op.value, DType::kF32, device); break;
      case RegionOp::Kind::kUnary: v[i] = apply_unary(op.op, arg(0)); break;
      case RegionOp::Kind::kBinary: {
        // A constant takes its partner's dtype: kiln does not promote.
        Tensor a = arg(0), b = arg(1);
        const auto& ka = region.ops[op.args[0]], &kb = region.ops[op.args[1]];
        if (ka.kind == RegionOp::Kind::kConstant) a = scalar(ka.value, b.dtype(), device);
        if (kb.kind == RegionOp::Kind::kConstant) b = scalar(kb.value, a.dtype(), device);
        v[i] = apply_binary(op.op, a, b);
        break;
      }
      case RegionOp::Kind::kPermute: v[i] = permute(arg(0), op.axes); break;
      case RegionOp::Kind::kMatmul: v[i] = matmul(arg(0), arg(1)); break;
      case RegionOp::Kind::kStableExp: {
        Tensor x = arg(0);
        if (op.mask.on()) x = where(CausalKeeps(op.mask, x.shape(), device), x, -INFINITY);
        v[i] = exp(x - max(x, op.axes, /*keepdim=*/true));
        break;
      }
      case RegionOp::Kind::kReduce:
        v[i] = op.op == OpKind::kReduceMean ? mean(arg(0), op.axes, op.keepdim) : sum(arg(0), op.axes, op.keepdim);
        break;
    }
  }
  return v.back();
}

std::vector<ExprId> RegionExpressions(const Region& region, ExprPool& pool, const std::vector<bool>& atoms) {
  std::vector<ExprId> e(region.ops.size());
  int next_atom = static_cast<int>(region.inputs.size());
  for (size_t i = 0; i < region.ops.size(); ++i) {
    const RegionOp& op = region.ops[i];
    if (i < atoms.size() && atoms[i]) {
      e[i] = pool.Input(next_atom++);
      continue;
    }
    switch (op.kind) {
      case RegionOp::Kind::kInput: e[i] = pool.Input(op.input); break;
      case RegionOp::Kind::kConstant: e[i] = pool.Constant(op.value); break;
      case RegionOp::Kind::kPermute: e[i] = e[op.args[0]]; break;
      case RegionOp::Kind::kUnary: e[i] = UnaryExpr(pool, op.op, e[op.args[0]]); break;
      case RegionOp::Kind::kStableExp: e[i] = StableExpExpr(pool, e[op.args[0]], op.mask); break;
      case RegionOp::Kind::kBinary: e[i] = BinaryExpr(pool, op.op, e[op.args[0]], e[op.args[1]]); break;
      case RegionOp::Kind::kMatmul: {
        const RegionOp& a = region.ops[op.args[0]];
        const int64_t k = NominalSize(region.class_size[a.classes.back()]);
        e[i] = pool.Sum(MakeRational(k, 1), pool.Mul(e[op.args[0]], e[op.args[1]]));
        break;
      }
      case RegionOp::Kind::kReduce: {
        const RegionOp& in = region.ops[op.args[0]];
        int64_t n = 1;
        for (int a : op.axes) n *= NominalSize(region.class_size[in.classes[a]]);
        e[i] = pool.Sum(MakeRational(n, 1), e[op.args[0]]);
        if (op.op == OpKind::kReduceMean) e[i] = pool.Mul(e[i], pool.Constant(1.0 / static_cast<double>(n)));
        break;
      }
    }
  }
  return e;
}

}  // namespace kiln::search
