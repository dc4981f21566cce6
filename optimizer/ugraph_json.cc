#include "optimizer/ugraph_json.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace kiln::ugraph {
namespace {

using json = nlohmann::json;

// Thrown inside FromJson only, caught at its boundary.
struct FormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Integers are read only from JSON integers in range: a float or an
// out-of-range value would make the conversion undefined.
int64_t AsInt64(const json& j) {
  if (j.is_number_unsigned()) {
    const uint64_t v = j.get<uint64_t>();
    if (v > static_cast<uint64_t>(INT64_MAX)) throw FormatError(absl::StrCat("integer out of range: ", j.dump()));
    return static_cast<int64_t>(v);
  }
  if (!j.is_number_integer()) throw FormatError(absl::StrCat("expected an integer, got ", j.dump()));
  return j.get<int64_t>();
}

int AsInt(const json& j) {
  const int64_t v = AsInt64(j);
  if (v < INT32_MIN || v > INT32_MAX) throw FormatError(absl::StrCat("integer out of range: ", j.dump()));
  return static_cast<int>(v);
}

uint64_t AsUint64(const json& j) {
  if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<int64_t>() >= 0)) {
    throw FormatError(absl::StrCat("expected a non-negative integer, got ", j.dump()));
  }
  return j.get<uint64_t>();
}

std::vector<int> AsInts(const json& j) {
  std::vector<int> out;
  for (const json& v : j) out.push_back(AsInt(v));
  return out;
}

std::vector<int64_t> AsInt64s(const json& j) {
  std::vector<int64_t> out;
  for (const json& v : j) out.push_back(AsInt64(v));
  return out;
}

std::array<int, 3> AsInt3(const json& j) {
  if (!j.is_array() || j.size() != 3) throw FormatError(absl::StrCat("expected 3 integers, got ", j.dump()));
  return {AsInt(j[0]), AsInt(j[1]), AsInt(j[2])};
}

// JSON has no inf or NaN: those travel as strings.
json DoubleJson(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double DoubleFrom(const json& j) {
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    throw FormatError(absl::StrCat("bad number ", j.dump()));
  }
  if (!j.is_number()) throw FormatError(absl::StrCat("expected a number, got ", j.dump()));
  return j.get<double>();
}

// ---- Dims and shapes: {"offset": n, "terms": [[name, max, coeff], ...]}

json DimJson(const Dim& d) {
  if (d.is_concrete()) return d.value();
  json terms = json::array();
  for (const Dim::Term& t : d.terms()) terms.push_back({t.symbol->name, t.symbol->max_value, t.coeff});
  return {{"offset", d.offset()}, {"terms", terms}};
}

Dim DimFrom(const json& j) {
  if (j.is_number_integer()) return Dim(AsInt64(j));
  Dim d(AsInt64(j.at("offset")));
  for (const json& t : j.at("terms")) {
    d = d + Dim(Symbol(t.at(0).get<std::string>(), AsInt64(t.at(1)))) * AsInt64(t.at(2));
  }
  return d;
}

json ShapeJson(const Shape& s) {
  json out = json::array();
  for (const Dim& d : s) out.push_back(DimJson(d));
  return out;
}

Shape ShapeFrom(const json& j) {
  Shape s;
  for (const json& d : j) s.push_back(DimFrom(d));
  return s;
}

DType DTypeFrom(const json& j) {
  std::optional<DType> d = ParseDType(j.get<std::string>());
  if (!d) throw FormatError(absl::StrCat("unknown dtype ", j.dump()));
  return *d;
}

OpKind OpFrom(const json& j) {
  std::optional<OpKind> op = ParseOpKind(j.get<std::string>());
  if (!op) throw FormatError(absl::StrCat("unknown op ", j.dump()));
  return *op;
}

template <typename E>
E EnumFrom(const json& j, int count, const char* what) {
  const int v = AsInt(j);
  if (v < 0 || v >= count) throw FormatError(absl::StrCat("bad ", what, " ", v));
  return static_cast<E>(v);
}

// ---- Views

json ViewJson(const View& v) {
  json steps = json::array();
  for (const ViewStep& s : v.steps) {
    json ranges = json::array();
    for (const auto& r : s.ranges) ranges.push_back({DimJson(r.start), r.step});
    steps.push_back({{"kind", static_cast<int>(s.kind)},
                     {"perm", s.perm},
                     {"ranges", ranges},
                     {"shape", ShapeJson(s.shape)}});
  }
  return {{"tensor", v.tensor},
          {"source_shape", ShapeJson(v.source_shape)},
          {"steps", steps},
          {"shape", ShapeJson(v.shape)}};
}

View ViewFrom(const json& j) {
  View v;
  v.tensor = AsInt(j.at("tensor"));
  v.source_shape = ShapeFrom(j.at("source_shape"));
  for (const json& s : j.at("steps")) {
    ViewStep step;
    step.kind = EnumFrom<ViewStep::Kind>(s.at("kind"), 4, "view kind");
    step.perm = AsInts(s.at("perm"));
    for (const json& r : s.at("ranges")) {
      step.ranges.push_back({DimFrom(r.at(0)), AsInt64(r.at(1))});
    }
    step.shape = ShapeFrom(s.at("shape"));
    v.steps.push_back(std::move(step));
  }
  v.shape = ShapeFrom(j.at("shape"));
  return v;
}

// ---- Thread graphs

json ThreadJson(const ThreadGraph& g) {
  json ops = json::array();
  for (const ScalarOp& op : g.ops) {
    ops.push_back({{"kind", static_cast<int>(op.kind)},
                   {"dtype", std::string(DTypeName(op.dtype))},
                   {"op", std::string(OpName(op.op))},
                   {"args", op.args},
                   {"input", op.input},
                   {"inputs", op.inputs},
                   {"bounds", ShapeJson(Shape(absl::MakeConstSpan(op.bounds)))},
                   {"index_rank", op.index_rank},
                   {"axis", op.axis},
                   {"quant", static_cast<int>(op.quant)},
                   {"value", DoubleJson(op.value)},
                   {"iota", {DimJson(op.iota.start), DoubleJson(op.iota.offset), DoubleJson(op.iota.step)}},
                   {"random",
                    {op.random.seed, static_cast<int>(op.random.distribution), DoubleJson(op.random.a),
                     DoubleJson(op.random.b)}}});
  }
  return ops;
}

ThreadGraph ThreadFrom(const json& j) {
  ThreadGraph g;
  for (const json& o : j) {
    ScalarOp op;
    op.kind = EnumFrom<ScalarOp::Kind>(o.at("kind"), 12, "scalar op kind");
    op.dtype = DTypeFrom(o.at("dtype"));
    op.op = OpFrom(o.at("op"));
    op.args = AsInts(o.at("args"));
    op.input = AsInt(o.at("input"));
    op.inputs = AsInts(o.at("inputs"));
    for (const Dim& d : ShapeFrom(o.at("bounds"))) op.bounds.push_back(d);
    op.index_rank = AsInt(o.at("index_rank"));
    op.axis = AsInt(o.at("axis"));
    // Entries written before dequant existed have no format (and no kDequant).
    if (o.contains("quant")) op.quant = EnumFrom<QuantFormat>(o.at("quant"), kNumQuantFormats, "quant format");
    op.value = DoubleFrom(o.at("value"));
    const json& iota = o.at("iota");
    op.iota = IotaAttrs{DimFrom(iota.at(0)), DoubleFrom(iota.at(1)), DoubleFrom(iota.at(2))};
    const json& r = o.at("random");
    op.random = RandomAttrs{AsUint64(r.at(0)),
                            EnumFrom<RandomDistribution>(r.at(1), 2, "distribution"),
                            DoubleFrom(r.at(2)), DoubleFrom(r.at(3))};
    g.ops.push_back(std::move(op));
  }
  return g;
}

json LaunchJson(const LaunchDim& d) { return {ShapeJson(d.extent), d.tile}; }
LaunchDim LaunchFrom(const json& j) { return {ShapeFrom(j.at(0)), AsInt64(j.at(1))}; }

// ---- Blocks

json BlockJson(const BlockGraph& b) {
  json inputs = json::array();
  for (const InputIterator& in : b.inputs) {
    json entry = {{"view", ViewJson(in.view)}, {"imap", in.imap}, {"fmap", in.fmap}};
    // Only quantized reads carry the key, so other graphs' text is unchanged.
    if (in.quant) {
      entry["quant"] = {static_cast<int>(in.quant->format), std::string(DTypeName(in.quant->dtype))};
    }
    inputs.push_back(std::move(entry));
  }
  json phases = json::array();
  for (const Phase& p : b.phases) {
    json accs = json::array();
    for (const Accumulator& a : p.accumulators) {
      accs.push_back({static_cast<int>(a.kind), a.value, a.mean, std::string(DTypeName(a.dtype))});
    }
    phases.push_back({{"graph", ThreadJson(p.graph)}, {"accumulators", accs}});
  }
  json outputs = json::array();
  for (const OutputSaver& o : b.outputs) {
    outputs.push_back({{"tensor", o.tensor},
                       {"value", o.value},
                       {"per_row", o.per_row},
                       {"omap", o.omap},
                       {"shift_axis", o.shift_axis},
                       {"shift", DimJson(o.shift)}});
  }
  json tile_ops = json::array();
  for (const TileOp& op : b.tile_ops) {
    tile_ops.push_back({static_cast<int>(op.kind), std::string(OpName(op.op)), op.args, op.input, op.axis,
                        DoubleJson(op.value), std::string(DTypeName(op.dtype)), op.rescale,
                        json::array({op.mask.row, op.mask.col, op.mask.shift})});
  }
  return {{"kind", static_cast<int>(b.kind)},
          {"tile_ops", tile_ops},
          {"grid", {LaunchJson(b.grid[0]), LaunchJson(b.grid[1]), LaunchJson(b.grid[2])}},
          {"threads", b.threads},
          {"forloop", LaunchJson(b.forloop)},
          {"inputs", inputs},
          {"phases", phases},
          {"epilogue", ThreadJson(b.epilogue)},
          {"tiles", {b.tiles.m, b.tiles.n, b.tiles.k, static_cast<int>(b.tiles.algorithm),
                     std::string(DTypeName(b.tiles.dtype))}},
          {"iteration_shape", ShapeJson(b.iteration_shape)},
          {"reduced_axes", b.reduced_axes},
          {"outputs", outputs},
          {"loop_split", b.loop_split},
          {"one_point_blocks", b.one_point_blocks}};
}

BlockGraph BlockFrom(const json& j) {
  BlockGraph b;
  b.kind = EnumFrom<BlockKind>(j.at("kind"), 4, "block kind");
  if (j.contains("tile_ops")) {
    for (const json& o : j.at("tile_ops")) {
      TileOp op;
      op.kind = EnumFrom<TileOp::Kind>(o.at(0), 9, "tile op kind");
      op.op = OpFrom(o.at(1));
      op.args = AsInts(o.at(2));
      op.input = AsInt(o.at(3));
      op.axis = AsInt(o.at(4));
      op.value = DoubleFrom(o.at(5));
      op.dtype = DTypeFrom(o.at(6));
      if (o.size() > 7) op.rescale = AsInt(o.at(7));  // written since the online softmax
      if (o.size() > 8) {                                // since the causal mask
        const json& m = o.at(8);
        if (!m.is_array() || m.size() != 3) throw FormatError("a tile op's mask is [row, col, shift]");
        op.mask.row = AsInt(m.at(0));
        op.mask.col = AsInt(m.at(1));
        op.mask.shift = AsInt64(m.at(2));
      }
      b.tile_ops.push_back(std::move(op));
    }
  }
  for (int g = 0; g < 3; ++g) b.grid[g] = LaunchFrom(j.at("grid").at(g));
  b.threads = AsInt(j.at("threads"));
  b.forloop = LaunchFrom(j.at("forloop"));
  if (j.contains("loop_split")) b.loop_split = AsInt(j.at("loop_split"));
  if (j.contains("one_point_blocks")) b.one_point_blocks = j.at("one_point_blocks").get<bool>();
  for (const json& in : j.at("inputs")) {
    InputIterator it;
    it.view = ViewFrom(in.at("view"));
    it.imap = AsInt3(in.at("imap"));
    it.fmap = AsInt(in.at("fmap"));
    if (in.contains("quant")) {
      const json& q = in.at("quant");
      it.quant = QuantRead{EnumFrom<QuantFormat>(q.at(0), kNumQuantFormats, "quant format"), DTypeFrom(q.at(1))};
    }
    b.inputs.push_back(std::move(it));
  }
  for (const json& p : j.at("phases")) {
    Phase phase;
    phase.graph = ThreadFrom(p.at("graph"));
    for (const json& a : p.at("accumulators")) {
      phase.accumulators.push_back({EnumFrom<AccumulatorKind>(a.at(0), 2, "accumulator kind"),
                                    AsInt(a.at(1)), a.at(2).get<bool>(), DTypeFrom(a.at(3))});
    }
    b.phases.push_back(std::move(phase));
  }
  b.epilogue = ThreadFrom(j.at("epilogue"));
  const json& t = j.at("tiles");
  b.tiles = {AsInt64(t.at(0)), AsInt64(t.at(1)), AsInt64(t.at(2)),
             EnumFrom<MatmulAlgorithm>(t.at(3), 3, "matmul algorithm"), DTypeFrom(t.at(4))};
  b.iteration_shape = ShapeFrom(j.at("iteration_shape"));
  b.reduced_axes = AsInts(j.at("reduced_axes"));
  for (const json& o : j.at("outputs")) {
    b.outputs.push_back({AsInt(o.at("tensor")), AsInt(o.at("value")), o.at("per_row").get<bool>(),
                         AsInt3(o.at("omap")), AsInt(o.at("shift_axis")), DimFrom(o.at("shift"))});
  }
  return b;
}

}  // namespace

std::string ToJson(const KernelGraph& graph) {
  json tensors = json::array();
  for (const DTensor& t : graph.tensors) {
    tensors.push_back({{"id", t.id},
                       {"dtype", std::string(DTypeName(t.dtype))},
                       {"shape", ShapeJson(t.shape)},
                       {"role", static_cast<int>(t.role)},
                       {"strides", t.strides},
                       {"aliases", t.aliases}});
  }
  json kernels = json::array();
  for (const Kernel& k : graph.kernels) {
    kernels.push_back({{"block", BlockJson(k.block)}, {"inputs", k.inputs}, {"outputs", k.outputs}});
  }
  return json{{"format", "kiln-ugraph-1"}, {"tensors", tensors}, {"kernels", kernels}}.dump();
}

absl::StatusOr<KernelGraph> FromJson(absl::string_view text) {
  const json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("uGraph JSON: not valid JSON");
  try {
    if (j.at("format").get<std::string>() != "kiln-ugraph-1") {
      return absl::InvalidArgumentError(
          absl::StrCat("uGraph JSON: unknown format ", j.at("format").dump()));
    }
    KernelGraph graph;
    for (const json& t : j.at("tensors")) {
      DTensor d;
      d.id = AsInt(t.at("id"));
      d.dtype = DTypeFrom(t.at("dtype"));
      d.shape = ShapeFrom(t.at("shape"));
      d.role = EnumFrom<TensorRole>(t.at("role"), 3, "tensor role");
      d.strides = AsInt64s(t.at("strides"));
      d.aliases = AsInt(t.at("aliases"));
      graph.tensors.push_back(std::move(d));
    }
    for (const json& k : j.at("kernels")) {
      graph.kernels.push_back({BlockFrom(k.at("block")), AsInts(k.at("inputs")),
                               AsInts(k.at("outputs"))});
    }
    return graph;
  } catch (const FormatError& e) {
    return absl::InvalidArgumentError(absl::StrCat("uGraph JSON: ", e.what()));
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("uGraph JSON: ", e.what()));
  }
}

}  // namespace kiln::ugraph
