#include "optimizer/codegen/thread_emitter.h"

#include "absl/strings/str_format.h"
#include "tensor/check.h"

namespace kiln::codegen {

using ugraph::ScalarOp;

std::string OpFunction(OpKind op) { return absl::StrCat("op_", OpName(op)); }

// Integer results wrap at their width after every op; floats keep f32
// precision inside a kernel (casts and stores round them).
std::string Round(DType dtype, const std::string& value) {
  if (IsFloating(dtype)) return value;
  return absl::StrCat("round_", DTypeSuffix(dtype), "(", value, ")");
}

std::string ThreadEmitter::StorageSuffix(int tensor) const {
  return DTypeSuffix(e_.graph().tensors[tensor].dtype);
}

std::vector<std::string> ThreadEmitter::Emit(const ugraph::ThreadGraph& graph,
                                             const std::vector<int>* roots) {
  graph_ = &graph;
  std::vector<bool> live(graph.ops.size(), roots == nullptr);
  if (roots != nullptr) {
    for (int r : *roots) live[r] = true;
    for (int i = static_cast<int>(graph.ops.size()) - 1; i >= 0; --i) {
      if (!live[i]) continue;
      for (int a : graph.ops[i].args) live[a] = true;
    }
  }
  std::vector<std::string> values;
  values.reserve(graph.ops.size());
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    values.push_back(live[i] ? EmitOp(graph.ops[i], values) : std::string());
  }
  return values;
}

std::string ThreadEmitter::EmitOp(const ScalarOp& op, const std::vector<std::string>& values) {
  const std::string type = ComputeType(op.dtype);
  const std::string dt = DTypeSuffix(op.dtype);
  const std::string v = e_.Fresh("v");
  const auto arg = [&](int i) { return values[op.args[i]]; };
  switch (op.kind) {
    case ScalarOp::Kind::kLoad: {
      const ugraph::View& view = block_.inputs[op.input].view;
      const std::string offset = e_.Offset(view, coords_);
      e_.Linef("const ", type, " ", v, " = load_", StorageSuffix(view.tensor), "(p.t[",
               e_.Slot(view.tensor), "], ", offset, ");");
      return v;
    }
    case ScalarOp::Kind::kConstant:
      e_.Linef("const ", type, " ", v, " = ", Literal(op.value, op.dtype), ";");
      return v;
    case ScalarOp::Kind::kIota: {
      const ugraph::View& view = block_.inputs[op.input].view;
      const std::vector<std::string> c = e_.Invert(view, coords_);
      e_.Linef("const ", type, " ", v, " = from_double_", dt, "(static_cast<double>(",
               e_.DimExpr(op.iota.start), ") + ", absl::StrFormat("%.17g", op.iota.offset),
               " + static_cast<double>(", c[0], ") * ", absl::StrFormat("%.17g", op.iota.step), ");");
      return v;
    }
    case ScalarOp::Kind::kRandom: {
      const ugraph::View& view = block_.inputs[op.input].view;
      const std::vector<std::string> c = e_.Invert(view, coords_);
      const std::string index = e_.Linearize(c, view.source_shape);
      const std::string seed = absl::StrCat(op.random.seed, "ULL");
      const std::string a = absl::StrFormat("%.17g", op.random.a);
      const std::string b = absl::StrFormat("%.17g", op.random.b);
      const std::string draw =
          op.random.distribution == RandomDistribution::kUniform
              ? absl::StrCat(a, " + (", b, " - ", a, ") * random_uniform(", seed, ", ", index, ")")
              : absl::StrCat(a, " + ", b, " * random_normal(", seed, ", ", index, ")");
      e_.Linef("const ", type, " ", v, " = from_double_", dt, "(", draw, ");");
      return v;
    }
    case ScalarOp::Kind::kAccumulator:
      e_.Linef("const ", type, " ", v, " = ", Round(op.dtype, accumulators_[op.input]), ";");
      return v;
    case ScalarOp::Kind::kUnary:
      e_.Linef("const ", type, " ", v, " = ",
               Round(op.dtype, absl::StrCat(OpFunction(op.op), "(", arg(0), ")")), ";");
      return v;
    case ScalarOp::Kind::kBinary:
      if (IsComparison(op.op)) {
        e_.Linef("const i64 ", v, " = ", OpFunction(op.op), "(", arg(0), ", ", arg(1), ");");
      } else if (op.op == OpKind::kDiv && !IsFloating(op.dtype)) {
        e_.Linef("const i64 ", v, " = round_", dt, "(op_div(", arg(0), ", ", arg(1), ", p.err));");
      } else {
        e_.Linef("const ", type, " ", v, " = ",
                 Round(op.dtype, absl::StrCat(OpFunction(op.op), "(", arg(0), ", ", arg(1), ")")),
                 ";");
      }
      return v;
    case ScalarOp::Kind::kWhere:
      e_.Linef("const ", type, " ", v, " = ", arg(0), " != 0 ? ", arg(1), " : ", arg(2), ";");
      return v;
    case ScalarOp::Kind::kCast: {
      const DType from = graph_->ops[op.args[0]].dtype;
      e_.Linef("const ", type, " ", v, " = cast_", IsFloating(from) ? "float_" : "int_", dt, "(",
               arg(0), ");");
      return v;
    }
    case ScalarOp::Kind::kGather:
      return EmitGather(op, arg(0));
    case ScalarOp::Kind::kSelect:
      return EmitSelect(op);
    case ScalarOp::Kind::kDequant:
      return EmitDequant(op);
  }
  KILN_UNREACHABLE("unknown scalar op");
}

std::string ThreadEmitter::EmitGather(const ScalarOp& op, const std::string& index) {
  const ugraph::View& coords_view = block_.inputs[op.inputs[0]].view;
  const ugraph::View& source = block_.inputs[op.input].view;
  const std::vector<std::string> c = e_.Invert(coords_view, coords_);
  const std::string g = e_.Fresh("g");
  const std::string limit = e_.DimExpr(source.shape[op.axis]);
  e_.Linef("i64 ", g, " = ", index, ";");
  e_.Linef("if (", g, " < 0 || ", g, " >= ", limit, ") { report(p.err, kIndexOutOfRange); ", g,
           " = 0; }");
  std::vector<std::string> x(c.begin(), c.begin() + op.axis);
  x.push_back(g);
  x.insert(x.end(), c.begin() + op.axis + op.index_rank, c.end());
  const std::string v = e_.Fresh("v");
  e_.Linef("const ", ComputeType(op.dtype), " ", v, " = load_", StorageSuffix(source.tensor), "(p.t[",
           e_.Slot(source.tensor), "], ", e_.Offset(source, x), ");");
  return v;
}

// The row's first byte is where the coordinates with the last one 0 point
// (dequantize takes only views that keep rows whole, so its bytes follow).
std::string ThreadEmitter::EmitDequant(const ScalarOp& op) {
  const ugraph::View& coords_view = block_.inputs[op.inputs[0]].view;
  const ugraph::View& source = block_.inputs[op.input].view;
  std::vector<std::string> c = e_.Invert(coords_view, coords_);
  const std::string col = c.back();
  c.back() = "0LL";
  const std::string value = absl::StrCat("dequant_", QuantDecoderName(op.quant), "(",
                                         BlockBytes(e_, source.tensor, e_.Offset(source, c)), ", ", col, ")");
  const std::string v = e_.Fresh("v");
  // Rounded to the dtype, as the CPU rounds a source.
  e_.Linef("const float ", v, " = ", RoundedTo(op.dtype, value), ";");
  return v;
}

std::string ThreadEmitter::EmitSelect(const ScalarOp& op) {
  const ugraph::View& coords_view = block_.inputs[op.inputs[0]].view;
  const std::vector<std::string> c = e_.Invert(coords_view, coords_);
  const std::string v = e_.Fresh("v");
  e_.Linef(ComputeType(op.dtype), " ", v, " = 0;");
  for (size_t piece = 1; piece < op.inputs.size(); ++piece) {
    const ugraph::View& view = block_.inputs[op.inputs[piece]].view;
    const std::string lo = e_.DimExpr(op.bounds[2 * piece - 2]);
    const std::string hi = e_.DimExpr(op.bounds[2 * piece - 1]);
    e_.Open(absl::StrCat(piece == 1 ? "if (" : "else if (", c[op.axis], " >= ", lo, " && ", c[op.axis],
                         " < ", hi, ")"));
    std::vector<std::string> shifted = c;
    shifted[op.axis] = e_.Fresh("c");
    e_.Linef("const ", e_.Index(), " ", shifted[op.axis], " = ", c[op.axis], " - ", lo, ";");
    e_.Linef(v, " = load_", StorageSuffix(view.tensor), "(p.t[", e_.Slot(view.tensor), "], ",
             e_.Offset(view, shifted), ");");
    e_.Close();
  }
  return v;
}

}  // namespace kiln::codegen
