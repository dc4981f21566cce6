#include "optimizer/codegen/emitter.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>

#include "absl/strings/ascii.h"
#include "tensor/check.h"
#include "tensor/convert.h"

namespace kiln::codegen {

void SymbolTable::Add(const Dim& d) {
  for (const Dim::Term& t : d.terms()) {
    if (std::find(symbols_.begin(), symbols_.end(), t.symbol) != symbols_.end()) continue;
    symbols_.push_back(t.symbol);
    std::sort(symbols_.begin(), symbols_.end(), [](const SymbolInfo* a, const SymbolInfo* b) {
      return std::tie(a->name, a->max_value) < std::tie(b->name, b->max_value);
    });
  }
}

int SymbolTable::IndexOf(const SymbolInfo* symbol) const {
  auto it = std::find(symbols_.begin(), symbols_.end(), symbol);
  KILN_CHECK(it != symbols_.end(), "symbol missing from the kernel's table");
  return static_cast<int>(it - symbols_.begin());
}

namespace {

void AddView(SymbolTable& table, const ugraph::View& view) {
  table.Add(view.source_shape);
  table.Add(view.shape);
  for (const ugraph::ViewStep& s : view.steps) {
    table.Add(s.shape);
    for (const auto& r : s.ranges) table.Add(r.start);
  }
}

void AddGraph(SymbolTable& table, const ugraph::ThreadGraph& g) {
  for (const ugraph::ScalarOp& op : g.ops) {
    table.Add(op.iota.start);
    for (const Dim& d : op.bounds) table.Add(d);
  }
}

}  // namespace

Emitter::Emitter(const ugraph::KernelGraph& graph, const ugraph::Kernel& kernel) : graph_(graph), kernel_(kernel) {
  for (int t : kernel.inputs) slots_.push_back(t);
  for (int t : kernel.outputs) {
    if (std::find(slots_.begin(), slots_.end(), t) == slots_.end()) slots_.push_back(t);
  }
  const ugraph::BlockGraph& b = kernel.block;
  for (int t : slots_) symbols_.Add(graph.tensors[t].shape);
  for (const auto& in : b.inputs) AddView(symbols_, in.view);
  symbols_.Add(b.iteration_shape);
  for (const auto& g : b.grid) symbols_.Add(g.extent);
  symbols_.Add(b.forloop.extent);
  for (const auto& p : b.phases) AddGraph(symbols_, p.graph);
  AddGraph(symbols_, b.epilogue);
  for (const auto& o : b.outputs) symbols_.Add(o.shift);
}

int Emitter::kernel_index() const {
  for (size_t k = 0; k < graph_.kernels.size(); ++k) {
    if (&graph_.kernels[k] == &kernel_) return static_cast<int>(k);
  }
  return -1;
}

void Emitter::UseIndex32(bool on) {
  KILN_CHECK(code_.empty(), "the index type is chosen before any code is emitted");
  index32_ = on;
}

namespace {

// The largest offset over `shape` with `strides` (row-major where empty),
// each coordinate up to `slack` past its dim's end; -1 for a symbolic size.
int64_t SlackSpan(const Shape& shape, const std::vector<int64_t>& strides, int64_t slack) {
  int64_t span = 0, running = 1;
  for (int k = shape.rank() - 1; k >= 0; --k) {
    if (!shape[k].is_concrete()) return -1;
    const int64_t stride = strides.empty() ? running : (strides[k] < 0 ? -strides[k] : strides[k]);
    span += (shape[k].value() + slack) * stride;
    running *= shape[k].value();
    if (span >= (int64_t{1} << 31) || running >= (int64_t{1} << 31)) return -1;
  }
  return span;
}

}  // namespace

bool Emitter::FitsIndex32() const {
  const ugraph::BlockGraph& b = kernel_.block;
  if (!symbols_.symbols().empty()) return false;
  int64_t tile = std::max<int64_t>(16, b.forloop.tile);
  for (const auto& g : b.grid) tile = std::max(tile, g.tile);
  const int64_t slack = kIndexSlackTiles * tile;
  const auto fits = [&](const Shape& shape, const std::vector<int64_t>& strides = {}) {
    const int64_t span = SlackSpan(shape, strides, slack);
    return span >= 0 && span < (int64_t{1} << 31);
  };
  for (int t : slots_) {
    if (!fits(graph_.tensors[t].shape, graph_.tensors[t].strides)) return false;
  }
  for (const auto& in : b.inputs) {
    if (!fits(in.view.source_shape) || !fits(in.view.shape)) return false;
    for (const ugraph::ViewStep& step : in.view.steps) {
      if (!fits(step.shape)) return false;
    }
  }
  if (!fits(b.iteration_shape) || !fits(b.forloop.extent)) return false;
  for (const auto& g : b.grid) {
    if (!fits(g.extent)) return false;
  }
  return true;
}

void Emitter::Line(absl::string_view text) {
  code_.append(2 * indent_, ' ');
  absl::StrAppend(&code_, text, "\n");
}

void Emitter::Open(absl::string_view head) {
  Line(absl::StrCat(head, " {"));
  ++indent_;
}

void Emitter::Close(absl::string_view tail) {
  --indent_;
  Line(tail);
}

std::string Emitter::Fresh(absl::string_view prefix) {
  std::string name = absl::StrCat(prefix, counter_++);
  // Not a name the tile library takes for a type (i64).
  if (name == "i64") name = absl::StrCat(prefix, counter_++);
  return name;
}

std::string Emitter::DimExpr(const Dim& d) const {
  if (d.is_concrete()) return IndexLiteral(d.value());
  std::string out = "(";
  bool first = true;
  for (const Dim::Term& t : d.terms()) {
    const std::string sym = absl::StrCat("p.s[", symbols_.IndexOf(t.symbol), "]");
    if (!first) absl::StrAppend(&out, t.coeff < 0 ? " - " : " + ");
    if (first && t.coeff < 0) absl::StrAppend(&out, "-");
    const int64_t magnitude = t.coeff < 0 ? -t.coeff : t.coeff;
    absl::StrAppend(&out, magnitude == 1 ? sym : absl::StrCat(IndexLiteral(magnitude), " * ", sym));
    first = false;
  }
  if (d.offset() != 0) {
    absl::StrAppend(&out, d.offset() < 0 ? " - " : " + ", IndexLiteral(d.offset() < 0 ? -d.offset() : d.offset()));
  }
  return out + ")";
}

std::string Emitter::NumelExpr(const Shape& s) const {
  if (s.rank() == 0) return IndexLiteral(1);
  std::string out;
  int64_t constant = 1;
  for (const Dim& d : s) {
    if (d.is_concrete()) {
      constant *= d.value();
    } else {
      absl::StrAppend(&out, out.empty() ? "" : " * ", DimExpr(d));
    }
  }
  if (out.empty()) return IndexLiteral(constant);
  return constant == 1 ? absl::StrCat("(", out, ")") : absl::StrCat("(", IndexLiteral(constant), " * ", out, ")");
}

int Emitter::Slot(int tensor) const {
  auto it = std::find(slots_.begin(), slots_.end(), tensor);
  KILN_CHECK(it != slots_.end(), "tensor missing from the kernel's slots");
  return static_cast<int>(it - slots_.begin());
}

std::vector<std::string> Emitter::Strides(int tensor) {
  auto it = strides_.find(tensor);
  if (it != strides_.end()) return it->second;
  const ugraph::DTensor& t = graph_.tensors[tensor];
  std::vector<std::string> out(t.shape.rank());
  if (!t.strides.empty()) {
    for (int k = 0; k < t.shape.rank(); ++k) out[k] = IndexLiteral(t.strides[k]);
  } else {
    std::string running = IndexLiteral(1);
    for (int k = t.shape.rank() - 1; k >= 0; --k) {
      const std::string name = absl::StrCat("st", tensor, "_", k);
      Linef("const ", Index(), " ", name, " = ", running, ";");
      out[k] = name;
      running = absl::StrCat(name, " * ", DimExpr(t.shape[k]));
    }
  }
  strides_[tensor] = out;
  return out;
}

std::vector<std::string> Emitter::Unravel(const std::string& linear, const Shape& shape) {
  std::vector<std::string> coords(shape.rank());
  if (shape.rank() == 0) return coords;
  std::string rest = Fresh("r");
  Linef(Index(), " ", rest, " = ", linear, ";");
  for (int k = shape.rank() - 1; k > 0; --k) {
    coords[k] = Fresh("c");
    if (shape[k] == Dim(1)) {
      Linef("const ", Index(), " ", coords[k], " = 0;");
      continue;
    }
    const std::string d = DimExpr(shape[k]);
    Linef("const ", Index(), " ", coords[k], " = ", rest, " % ", d, ";");
    Linef(rest, " /= ", d, ";");
  }
  coords[0] = Fresh("c");
  Linef("const ", Index(), " ", coords[0], " = ", rest, ";");
  return coords;
}

std::string Emitter::Linearize(const std::vector<std::string>& coords, const Shape& shape) {
  if (coords.empty()) return IndexLiteral(0);
  std::string out = coords[0];
  for (int k = 1; k < shape.rank(); ++k) {
    out = absl::StrCat("(", out, ") * ", DimExpr(shape[k]), " + ", coords[k]);
  }
  return out;
}

std::vector<std::string> Emitter::InvertReshape(const Shape& in, const Shape& out,
                                                const std::vector<std::string>& coords) {
  std::vector<std::string> result(in.rank());
  // Leading and trailing dims that match pass through; the middle is one
  // group (linearized over `out`, split over `in`), cut further where both
  // sides are concrete and their running products meet.
  int lead = 0;
  while (lead < in.rank() && lead < out.rank() && in[lead] == out[lead]) {
    result[lead] = coords[lead];
    ++lead;
  }
  int trail = 0;
  while (trail < in.rank() - lead && trail < out.rank() - lead &&
         in[in.rank() - 1 - trail] == out[out.rank() - 1 - trail]) {
    result[in.rank() - 1 - trail] = coords[out.rank() - 1 - trail];
    ++trail;
  }
  const int i_end = in.rank() - trail, j_end = out.rank() - trail;
  int i = lead, j = lead;
  while (i < i_end || j < j_end) {
    if (i < i_end && j < j_end && in[i] == out[j]) {
      result[i] = coords[j];
      ++i;
      ++j;
      continue;
    }
    // A group [i, i2) x [j, j2) of equal (concrete) products; if none can be
    // found, everything left is one group.
    int i2 = i_end, j2 = j_end;
    if (i < i_end && j < j_end && in[i].is_concrete() && out[j].is_concrete()) {
      int a = i + 1, b = j + 1;
      int64_t pi = in[i].value(), pj = out[j].value();
      bool ok = true;
      while (ok && pi != pj) {
        if (pi < pj) {
          ok = a < i_end && in[a].is_concrete();
          if (ok) pi *= in[a++].value();
        } else {
          ok = b < j_end && out[b].is_concrete();
          if (ok) pj *= out[b++].value();
        }
      }
      if (ok) {
        i2 = a;
        j2 = b;
      }
    }
    std::vector<std::string> group_coords(coords.begin() + j, coords.begin() + j2);
    const Shape group_out(out.dims().subspan(j, j2 - j));
    const Shape group_in(in.dims().subspan(i, i2 - i));
    const std::string linear = Linearize(group_coords, group_out);
    std::vector<std::string> split;
    if (group_in.rank() == 1) {
      split = {Fresh("c")};
      Linef("const ", Index(), " ", split[0], " = ", linear, ";");
    } else {
      split = Unravel(linear, group_in);
    }
    for (int k = 0; k < group_in.rank(); ++k) result[i + k] = split[k];
    i = i2;
    j = j2;
  }
  return result;
}

std::vector<std::string> Emitter::Invert(const ugraph::View& view, std::vector<std::string> coords) {
  for (int s = static_cast<int>(view.steps.size()) - 1; s >= 0; --s) {
    const ugraph::ViewStep& step = view.steps[s];
    const Shape& in = s == 0 ? view.source_shape : view.steps[s - 1].shape;
    std::vector<std::string> next(in.rank());
    switch (step.kind) {
      case ugraph::ViewStep::Kind::kPermute:
        for (size_t i = 0; i < step.perm.size(); ++i) next[step.perm[i]] = coords[i];
        break;
      case ugraph::ViewStep::Kind::kSlice:
        for (int i = 0; i < in.rank(); ++i) {
          const auto& r = step.ranges[i];
          if (r.start == Dim(0) && r.step == 1) {
            next[i] = coords[i];
            continue;
          }
          next[i] = Fresh("c");
          Linef("const ", Index(), " ", next[i], " = ", DimExpr(r.start), " + ", coords[i],
                r.step == 1 ? "" : absl::StrCat(" * ", IndexLiteral(r.step)), ";");
        }
        break;
      case ugraph::ViewStep::Kind::kExpand: {
        const int lead = step.shape.rank() - in.rank();
        for (int i = 0; i < in.rank(); ++i) {
          next[i] = in[i] == Dim(1) ? IndexLiteral(0) : coords[lead + i];
        }
        break;
      }
      case ugraph::ViewStep::Kind::kReshape:
        next = InvertReshape(in, step.shape, coords);
        break;
    }
    coords = std::move(next);
  }
  return coords;
}

std::string Emitter::TensorOffset(int tensor, const std::vector<std::string>& coords) {
  const std::vector<std::string> st = Strides(tensor);
  const ugraph::DTensor& t = graph_.tensors[tensor];
  std::string out;
  for (int k = 0; k < t.shape.rank(); ++k) {
    if (t.shape[k] == Dim(1) || st[k] == IndexLiteral(0) || coords[k] == IndexLiteral(0)) continue;
    const std::string term = st[k] == IndexLiteral(1) ? coords[k] : absl::StrCat(coords[k], " * ", st[k]);
    absl::StrAppend(&out, out.empty() ? "" : " + ", term);
  }
  return out.empty() ? IndexLiteral(0) : out;
}

std::string Emitter::Offset(const ugraph::View& view, const std::vector<std::string>& coords) {
  return TensorOffset(view.tensor, Invert(view, coords));
}

std::string DTypeSuffix(DType dtype) { return std::string(DTypeName(dtype)); }

std::string RoundedTo(DType dtype, const std::string& v) {
  return dtype == DType::kF32 ? v : absl::StrCat("round_", DTypeSuffix(dtype), "(", v, ")");
}

std::string QuantDecoderName(QuantFormat format) { return absl::AsciiStrToLower(QuantName(format)); }

std::string BlockBytes(Emitter& e, int tensor, const std::string& offset) {
  return absl::StrCat("reinterpret_cast<const unsigned char*>(p.t[", e.Slot(tensor), "]) + ", offset);
}

std::string ComputeType(DType dtype) { return IsFloating(dtype) ? "float" : "i64"; }

std::string Literal(double value, DType dtype) {
  if (IsFloating(dtype)) {
    // The value the CPU stores, widened back to f32.
    char stored[8];
    float f = 0;
    ConvertFromDouble(&value, dtype, stored, 1);
    ConvertElements(dtype, stored, DType::kF32, &f, 1);
    if (std::isnan(f)) return "__int_as_float(0x7fc00000)";
    if (std::isinf(f)) return f > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), "%af", f);
    return buffer;
  }
  char stored[8];
  int64_t v = 0;
  ConvertFromDouble(&value, dtype, stored, 1);
  ConvertElements(dtype, stored, DType::kI64, &v, 1);
  if (v == INT64_MIN) return "(-9223372036854775807LL - 1)";
  return absl::StrCat(v, "LL");
}

}  // namespace kiln::codegen
