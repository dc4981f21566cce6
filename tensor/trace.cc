#include "tensor/trace.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "tensor/tensor.h"

namespace kiln {

absl::StatusOr<Trace> Trace::Collect(absl::Span<const Tensor> outputs) {
  Trace trace;
  for (const Tensor& t : outputs) {
    if (!t.defined()) {
      return absl::FailedPreconditionError("cannot realize an undefined (default-constructed) Tensor");
    }
    if (!t.node()->error.ok()) return t.node()->error;
    trace.roots_.push_back(t.node());
  }
  // Iterative post-order DFS: deep traces must not overflow the stack.
  struct Frame {
    Node* node;
    size_t next_input;
  };
  std::vector<Frame> stack;
  for (const std::shared_ptr<Node>& root : trace.roots_) {
    if (trace.index_.contains(root.get())) continue;
    stack.push_back({root.get(), 0});
    while (!stack.empty()) {
      Frame& frame = stack.back();
      Node* node = frame.node;
      if (frame.next_input < node->inputs.size() && !node->is_realized()) {
        Node* input = node->inputs[frame.next_input++].get();
        if (!input->error.ok()) return input->error;
        if (!trace.index_.contains(input)) stack.push_back({input, 0});
        continue;
      }
      stack.pop_back();
      if (trace.index_.contains(node)) continue;
      trace.index_[node] = static_cast<int>(trace.nodes_.size());
      trace.nodes_.push_back(node);
    }
  }
  absl::flat_hash_set<const Node*> seen_outputs;
  for (const std::shared_ptr<Node>& root : trace.roots_) {
    if (seen_outputs.insert(root.get()).second) trace.outputs_.push_back(root.get());
  }
  return trace;
}

int Trace::IndexOf(const Node* node) const {
  auto it = index_.find(node);
  return it == index_.end() ? -1 : it->second;
}

namespace {

template <typename Visit>
void ForEachDim(const Node& node, Visit&& visit) {
  for (const Dim& d : node.shape) visit(d);
  if (const auto* a = std::get_if<IotaAttrs>(&node.attrs)) visit(a->start);
  if (const auto* a = std::get_if<SliceAttrs>(&node.attrs)) {
    for (const auto& r : a->ranges) visit(r.start);
  }
  if (const auto* a = std::get_if<SliceUpdateAttrs>(&node.attrs)) visit(a->start);
}

}  // namespace

std::vector<Symbol> Trace::Symbols() const {
  absl::flat_hash_set<const SymbolInfo*> seen;
  std::vector<const SymbolInfo*> found;
  for (const Node* node : nodes_) {
    ForEachDim(*node, [&](const Dim& d) {
      for (const Dim::Term& t : d.terms()) {
        if (seen.insert(t.symbol).second) found.push_back(t.symbol);
      }
    });
  }
  std::sort(found.begin(), found.end(), [](const SymbolInfo* a, const SymbolInfo* b) {
    return std::tie(a->name, a->max_value) < std::tie(b->name, b->max_value);
  });
  std::vector<Symbol> out;
  for (const SymbolInfo* info : found) out.emplace_back(info->name, info->max_value);
  return out;
}

Hash128 Trace::StructuralHash() const {
  StableHasher h;
  h.Add(static_cast<uint64_t>(nodes_.size()));
  for (const Node* node : nodes_) {
    h.Add(static_cast<uint64_t>(node->op)).Add(static_cast<uint64_t>(node->dtype));
    h.Add(static_cast<uint64_t>(node->device.type));
    node->shape.Hash(h);
    if (node->is_realized()) {
      // A leaf's layout decides how a kernel indexes it; its data does not.
      h.Add(static_cast<uint64_t>(node->data.strides.size()));
      for (int64_t s : node->data.strides) h.Add(s);
      continue;
    }
    HashAttrs(node->attrs, h);
    h.Add(static_cast<uint64_t>(node->inputs.size()));
    for (const auto& input : node->inputs) h.Add(IndexOf(input.get()));
  }
  h.Add(static_cast<uint64_t>(outputs_.size()));
  for (const Node* out : outputs_) h.Add(IndexOf(out));
  return h.Finish();
}

namespace {

std::string NodeSummary(const Node& node) {
  std::string text = absl::StrCat(node.is_realized() ? "leaf" : OpName(node.op), " ",
                                  DTypeName(node.dtype), node.shape.ToString());
  return text;
}

}  // namespace

std::string Trace::ToText() const {
  std::string out;
  std::vector<Symbol> symbols = Symbols();
  absl::StrAppend(&out, "trace: ", nodes_.size(), " nodes");
  if (!symbols.empty()) {
    absl::StrAppend(&out, ", symbols:");
    for (const Symbol& s : symbols) absl::StrAppend(&out, " ", s.name(), "<=", s.max_value());
  }
  absl::StrAppend(&out, "\n");
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& node = *nodes_[i];
    absl::StrAppend(&out, "  %", i, " = ", NodeSummary(node));
    if (node.device.type != DeviceType::kCpu) absl::StrAppend(&out, " @", node.device.ToString());
    if (!node.is_realized()) {
      for (size_t j = 0; j < node.inputs.size(); ++j) {
        absl::StrAppend(&out, j ? ", %" : " %", IndexOf(node.inputs[j].get()));
      }
      std::string attrs = AttrsToString(node.attrs);
      if (!attrs.empty()) absl::StrAppend(&out, " {", attrs, "}");
    }
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out, "  outputs:");
  for (const Node* node : outputs_) absl::StrAppend(&out, " %", IndexOf(node));
  absl::StrAppend(&out, "\n");
  return out;
}

std::string Trace::ToDot() const {
  std::string out = "digraph trace {\n  rankdir=TB;\n  node [fontname=\"monospace\"];\n";
  absl::flat_hash_set<const Node*> outputs(outputs_.begin(), outputs_.end());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& node = *nodes_[i];
    std::string label = absl::StrCat("%", i, " ", NodeSummary(node));
    if (!node.is_realized()) {
      std::string attrs = AttrsToString(node.attrs);
      if (!attrs.empty()) absl::StrAppend(&label, "\\n", absl::StrReplaceAll(attrs, {{"\"", "\\\""}}));
    }
    const char* style = node.is_realized() ? "shape=box, style=filled, fillcolor=lightgrey"
                         : outputs.contains(&node) ? "shape=box, peripheries=2"
                                                   : "shape=box";
    absl::StrAppend(&out, "  n", i, " [label=\"", label, "\", ", style, "];\n");
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& node = *nodes_[i];
    if (node.is_realized()) continue;
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      absl::StrAppend(&out, "  n", IndexOf(node.inputs[j].get()), " -> n", i);
      if (node.inputs.size() > 1) absl::StrAppend(&out, " [label=\"", j, "\"]");
      absl::StrAppend(&out, ";\n");
    }
  }
  return out + "}\n";
}

}  // namespace kiln
