#include "optimizer/search/region.h"

#include <algorithm>
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

  // A product scaled by a constant, (a b) c, as (a c) b, or a (b c) where b
  // is the smaller operand: the scale becomes part of reading an operand
  // (a prologue the search does not build), not an op on the product
  // the search must place. Exact in real arithmetic; the scaled operand is
  // rounded to the product's dtype, as every operand of a product is.
  // -1 where `n` is not one, or one of the nodes between is a boundary.
  int ScaledProductOp(const Node* n) {
    const Node* constant = nullptr;
    std::vector<const Node*> between;
    const Node* product = ScaledProduct(n, &constant, &between);
    if (product == nullptr) return -1;
    for (const Node* b : between) {
      if (is_boundary_(b) || done_.contains(b)) return -1;
    }
    region_.nodes.insert(region_.nodes.end(), between.begin(), between.end());
    int a = Visit(product->inputs[0].get()), b = Visit(product->inputs[1].get());
    auto elements = [&](int op) {
      int64_t count = 1;
      for (int c : region_.ops[op].classes) count *= NominalSize(classes_.size(classes_.Find(c)));
      return count;
    };
    int& scaled = elements(b) < elements(a) ? b : a;
    RegionOp c;
    c.kind = RegionOp::Kind::kConstant;
    c.value = std::get<ConstantAttrs>(constant->attrs).value;
    c.classes = FreshClasses(Shape());
    const int c_id = Add(std::move(c));
    RegionOp mul;
    mul.kind = RegionOp::Kind::kBinary;
    mul.op = OpKind::kMul;
    mul.args = {scaled, c_id};
    mul.classes = region_.ops[scaled].classes;
    scaled = Add(std::move(mul));
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

int64_t NominalSize(const Dim& d) { return d.is_concrete() ? d.value() : d.max_value(); }

std::vector<int64_t> Region::Shape(int op, const std::vector<int64_t>& sizes) const {
  std::vector<int64_t> shape;
  for (int c : ops[op].classes) shape.push_back(sizes[c]);
  return shape;
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
      case RegionOp::Kind::kStableExp: v[i] = exp(arg(0) - max(arg(0), op.axes, /*keepdim=*/true)); break;
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
      case RegionOp::Kind::kStableExp: e[i] = pool.Exp(e[op.args[0]]); break;  // the shift dropped
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
