#include "optimizer/partition.h"

#include <algorithm>
#include <functional>

namespace kiln::lowering {
namespace {

// The keepdim shape of a row group's reductions: reduced axes of size 1.
Shape RowShape(const Group& g) {
  Shape s = g.space;
  for (int a : g.reduced_axes) s[a] = Dim(1);
  return s;
}

class Partitioner {
 public:
  Partitioner(const Trace& trace, const PartitionOptions& options)
      : trace_(trace), options_(options) {
    for (const Node* n : trace.nodes()) {
      if (n->is_realized()) continue;
      for (const auto& in : n->inputs) consumers_[in.get()].push_back(n);
    }
    for (const Node* n : trace.outputs()) outputs_.insert(n);
  }

  Partition Run() {
    for (const Node* n : trace_.nodes()) {
      if (n->is_realized() || IsView(n->op)) continue;
      if (auto it = options_.fused.find(n); it != options_.fused.end()) {
        for (const Node* in : it->second) NeedBuffer(in);
        need_buffer_.insert(n);
        NewGroup(GroupKind::kFused, n, n->shape);
        continue;
      }
      if (options_.fused_interior.contains(n)) continue;
      if (DecodedWhereLoaded(n)) {
        NeedBuffer(n->inputs[0].get());
        result_.decoded_in_loads.insert(n);
        continue;
      }
      // Sources, and elementwise ops on nothing but sources (a causal mask
      // from two iotas), are recomputed wherever they are read.
      if (IsSource(n->op) || (IsElementwise(n->op) && OnlyInlined(n))) {
        if (outputs_.contains(n) || options_.force_materialize.contains(n)) {
          NewGroup(GroupKind::kPointwise, n, n->shape);
        } else {
          inlined_.insert(n);
        }
        continue;
      }
      Place(n);
    }
    Materialize();
    return std::move(result_);
  }

 private:
  int NewGroup(GroupKind kind, const Node* anchor, const Shape& space) {
    Group g;
    g.kind = kind;
    g.anchor = anchor;
    g.space = space;
    g.members.push_back(anchor);
    result_.groups.push_back(std::move(g));
    const int id = static_cast<int>(result_.groups.size()) - 1;
    result_.group_of[anchor] = id;
    return id;
  }

  void Join(int group, const Node* n) {
    result_.groups[group].members.push_back(n);
    result_.group_of[n] = group;
  }

  // Whether every input, through views, is a source or itself inlined.
  bool OnlyInlined(const Node* n) const {
    for (const auto& in : n->inputs) {
      const Node* base = ThroughViews(in.get());
      if (base->is_realized() || !(IsSource(base->op) || inlined_.contains(base))) return false;
    }
    return true;
  }

  // Moves every member of group `from` into `into` (`from` stays, empty).
  void Merge(int into, int from) {
    for (const Node* m : result_.groups[from].members) Join(into, m);
    result_.groups[from].members.clear();
  }

  // The group of a directly read, computed, unforced input; -1 otherwise.
  int GroupOfDirect(const Node* in) const {
    if (in->is_realized() || IsView(in->op) || options_.force_materialize.contains(in)) return -1;
    auto it = result_.group_of.find(in);
    return it == result_.group_of.end() ? -1 : it->second;
  }

  void Place(const Node* n) {
    if (n->op == OpKind::kMatmul) {
      NeedBuffer(n->inputs[0].get());
      NeedBuffer(n->inputs[1].get());
      NewGroup(GroupKind::kMatmul, n, n->shape);
      return;
    }
    if (n->op == OpKind::kSliceUpdate && options_.in_place_updates.contains(n)) {
      NeedBuffer(n->inputs[0].get());
      if (const int g = GroupOnlyFeeding(n->inputs[1].get(), n); g >= 0) {
        // The update computes its value (RoPE'd keys written straight
        // into the cache): the group becomes the update's kernel.
        Group& group = result_.groups[g];
        group.kind = GroupKind::kInPlaceUpdate;
        group.anchor = n;
        group.space = n->inputs[1]->shape;
        Join(g, n);
        return;
      }
      NeedBuffer(n->inputs[1].get());
      if (const int g = SiblingUpdate(n); g >= 0) {
        Join(g, n);  // the K and V cache writes of a layer: one kernel
        return;
      }
      NewGroup(GroupKind::kInPlaceUpdate, n, n->inputs[1]->shape);
      return;
    }
    if (IsReduce(n->op)) {
      PlaceReduction(n);
      return;
    }
    // Pointwise: data sources of gathers, concats, updates and dequantized
    // blocks need buffers.
    if (n->op == OpKind::kIndexSelect || n->op == OpKind::kDequantize) NeedBuffer(n->inputs[0].get());
    if (n->op == OpKind::kConcat || n->op == OpKind::kSliceUpdate) {
      for (const auto& in : n->inputs) NeedBuffer(in.get());
    }
    for (const auto& in : n->inputs) {
      if ((n->op == OpKind::kIndexSelect || n->op == OpKind::kDequantize) && in == n->inputs[0]) continue;
      if (n->op == OpKind::kConcat || n->op == OpKind::kSliceUpdate) break;
      const int g = GroupOfDirect(in.get());
      if (g >= 0 && Accepts(result_.groups[g], n) && !WouldCycle(g, n)) {
        MergeSiblings(g, n);  // before n joins: n would tie the groups together
        Join(g, n);
        return;
      }
    }
    NewGroup(GroupKind::kPointwise, n, n->shape);
  }

  // The pointwise group computing `value` (through views that keep its
  // element count) when everything it computes is read only inside it or
  // by `reader`; -1 otherwise.
  int GroupOnlyFeeding(const Node* value, const Node* reader) const {
    const Node* base = ThroughViews(value);
    const int g = GroupOfDirect(base);
    if (g < 0) return -1;
    const Group& group = result_.groups[g];
    if (group.kind != GroupKind::kPointwise) return -1;
    const Shape& space = group.space;
    const bool same_count = space == value->shape || (space.is_concrete() && value->shape.is_concrete() &&
                                                      space.num_elements() == value->shape.num_elements());
    if (!same_count) return -1;
    for (const Node* m : group.members) {
      if (outputs_.contains(m) || options_.force_materialize.contains(m)) return -1;
      bool inside = true;
      ForEachUse(m, [&](const Node* c, bool) {
        if (c == reader) return;
        auto it = result_.group_of.find(c);
        inside &= !IsView(c->op) && it != result_.group_of.end() && it->second == g;
      });
      if (!inside) return -1;
    }
    return g;
  }

  // An in-place update group whose values have the shape of update `n`'s,
  // where `n` reads nothing that depends on it; -1 if none.
  int SiblingUpdate(const Node* n) const {
    const std::vector<int> read = GroupsRead(n);
    for (int g = static_cast<int>(result_.groups.size()) - 1; g >= 0; --g) {
      const Group& group = result_.groups[g];
      if (group.kind != GroupKind::kInPlaceUpdate || !(group.space == n->inputs[1]->shape)) continue;
      if (group.members.size() >= kMaxMembers) continue;
      bool independent = true;
      for (int r : read) independent &= r != g && !DependsOn(r, g);
      if (independent) return g;
    }
    return -1;
  }

  // Other pointwise groups of the same space that `n` reads directly join
  // `g` too (a + b of two fused chains is one kernel; x * cos + gathered(x)
  // * sin, RoPE, is one), where neither group depends on the other through a
  // third. Their gathers and concats read buffers, so they may come along;
  // updates stay in groups of their own.
  void MergeSiblings(int g, const Node* n) {
    if (result_.groups[g].kind != GroupKind::kPointwise) return;
    for (const auto& in : n->inputs) {
      const int h = GroupOfDirect(in.get());
      if (h < 0 || h == g) continue;
      const Group& other = result_.groups[h];
      if (other.kind != GroupKind::kPointwise || !(other.space == result_.groups[g].space)) continue;
      if (result_.groups[g].members.size() + other.members.size() > kMaxMembers) continue;
      bool movable = true;
      for (const Node* m : other.members) {
        movable &= IsElementwise(m->op) || m->op == OpKind::kIndexSelect || m->op == OpKind::kConcat;
      }
      if (!movable || DependsOn(g, h) || DependsOn(h, g)) continue;
      Merge(g, h);
    }
  }

  // The groups `n` reads, looking through views and inlined sources.
  std::vector<int> GroupsRead(const Node* n) const {
    std::vector<int> out;
    std::vector<const Node*> stack;
    for (const auto& in : n->inputs) stack.push_back(in.get());
    while (!stack.empty()) {
      const Node* m = stack.back();
      stack.pop_back();
      if (m->is_realized()) continue;
      auto it = result_.group_of.find(m);
      if (it != result_.group_of.end()) {
        out.push_back(it->second);
        continue;
      }
      for (const auto& in : m->inputs) stack.push_back(in.get());
    }
    return out;
  }

  // Whether group `from` reads (transitively) anything of group `to`.
  bool DependsOn(int from, int to) const {
    std::vector<int> stack = {from};
    absl::flat_hash_set<int> seen;
    while (!stack.empty()) {
      const int g = stack.back();
      stack.pop_back();
      if (!seen.insert(g).second) continue;
      for (const Node* m : result_.groups[g].members) {
        for (int h : GroupsRead(m)) {
          if (h == g) continue;
          if (h == to) return true;
          stack.push_back(h);
        }
      }
    }
    return false;
  }

  // Joining `n` to `g` must not make g both precede and follow another group.
  bool WouldCycle(int g, const Node* n) const {
    for (int h : GroupsRead(n)) {
      if (h != g && DependsOn(h, g)) return true;
    }
    return false;
  }

  // Bounded groups keep generated kernels (and their compile time) small.
  static constexpr size_t kMaxMembers = 128;

  bool Accepts(const Group& g, const Node* n) const {
    if (g.members.size() >= kMaxMembers) return false;
    switch (g.kind) {
      case GroupKind::kPointwise:
        return n->shape == g.space;
      case GroupKind::kRowReduce:
        // Element-level consumers and row-level (keepdim) arithmetic; data
        // movement stays out of row kernels.
        return IsElementwise(n->op) && (n->shape == g.space || n->shape == RowShape(g));
      case GroupKind::kMatmul:
        return IsElementwise(n->op) && n->shape == g.space;
      case GroupKind::kInPlaceUpdate:
      case GroupKind::kFused:
        return false;
    }
    return false;
  }

  void PlaceReduction(const Node* r) {
    const Node* in = r->inputs[0].get();
    const auto& attrs = std::get<ReduceAttrs>(r->attrs);
    std::vector<int> axes(attrs.axes.begin(), attrs.axes.end());
    const int g = GroupOfDirect(in);
    if (g >= 0 && attrs.keepdim) {
      Group& group = result_.groups[g];
      if (group.kind == GroupKind::kRowReduce && group.space == in->shape &&
          group.reduced_axes == axes && !WouldCycle(g, r)) {
        Join(g, r);
        return;
      }
      // A pointwise group over the reduced input becomes this row kernel.
      if (group.kind == GroupKind::kPointwise && group.space == in->shape &&
          IsElementwise(group.anchor->op) && !WouldCycle(g, r)) {
        bool plain = true;
        for (const Node* m : group.members) plain &= IsElementwise(m->op);
        if (plain) {
          group.kind = GroupKind::kRowReduce;
          group.reduced_axes = axes;
          group.anchor = r;
          Join(g, r);
          return;
        }
      }
    }
    const int id = NewGroup(GroupKind::kRowReduce, r, in->shape);
    result_.groups[id].reduced_axes = axes;
    if (!attrs.keepdim) {
      // Consumers only fuse with keepdim reductions; this one is read from a
      // buffer (its group still computes it).
      result_.materialized.insert(r);
    }
  }

  void NeedBuffer(const Node* n) {
    const Node* base = ThroughViews(n);
    if (!base->is_realized() && !result_.decoded_in_loads.contains(base)) need_buffer_.insert(base);
  }

  // Whether `n` dequantizes a buffer's dense rows (no view between) and is
  // read only as the second operand of products, each of them placed by
  // the default rules, possibly through views.
  bool DecodedWhereLoaded(const Node* n) const {
    if (n->op != OpKind::kDequantize || outputs_.contains(n) || options_.force_materialize.contains(n)) return false;
    const Node* packed = n->inputs[0].get();
    if (!packed->is_realized() && IsView(packed->op)) return false;
    bool any = false, only_products = true;
    ForEachUse(n, [&](const Node* c, bool) {
      any = true;
      only_products &= c->op == OpKind::kMatmul && ThroughViews(c->inputs[1].get()) == n &&
                       ThroughViews(c->inputs[0].get()) != n && !options_.fused.contains(c) &&
                       !options_.fused_interior.contains(c);
    });
    return any && only_products;
  }

  // Consumers of `n`, following views; `direct` is false for reads through views.
  void ForEachUse(const Node* n, const std::function<void(const Node*, bool)>& visit) const {
    std::vector<std::pair<const Node*, bool>> stack = {{n, true}};
    while (!stack.empty()) {
      auto [m, direct] = stack.back();
      stack.pop_back();
      auto it = consumers_.find(m);
      if (it == consumers_.end()) continue;
      for (const Node* c : it->second) {
        if (IsView(c->op)) {
          if (outputs_.contains(c)) visit(c, false);
          stack.push_back({c, false});
        } else {
          visit(c, direct);
        }
      }
    }
  }

  void Materialize() {
    for (const Node* n : need_buffer_) {
      result_.materialized.insert(n);
      if (!result_.group_of.contains(n)) NewGroup(GroupKind::kPointwise, n, n->shape);
    }
    for (const Node* n : options_.force_materialize) {
      if (n->is_realized() || IsView(n->op)) continue;
      result_.materialized.insert(n);
      if (!result_.group_of.contains(n)) NewGroup(GroupKind::kPointwise, n, n->shape);
    }
    for (const auto& [n, g] : result_.group_of) {
      if (outputs_.contains(n)) {
        result_.materialized.insert(n);
        continue;
      }
      bool external = false;
      ForEachUse(n, [&](const Node* c, bool) {
        auto it = result_.group_of.find(c);
        if (IsView(c->op) || it == result_.group_of.end() || it->second != g) external = true;
      });
      if (external) result_.materialized.insert(n);
    }
    // A view output is a view of its base's buffer, unless it reshapes (a
    // reshape is not always expressible as strides): then it is copied.
    for (const Node* out : trace_.outputs()) {
      if (out->is_realized() || !IsView(out->op)) continue;
      // Reshapes alone of a buffer kiln allocates (dense) are always views.
      const bool dense_reshape = !ThroughViews(out)->is_realized() && OnlyReshapes(out);
      if (ChainHasReshape(out) && !dense_reshape) {
        result_.materialized.insert(out);
        NewGroup(GroupKind::kPointwise, out, out->shape);
        continue;
      }
      const Node* base = ThroughViews(out);
      if (base->is_realized()) continue;
      result_.materialized.insert(base);
      if (!result_.group_of.contains(base)) NewGroup(GroupKind::kPointwise, base, base->shape);
    }
    OrderGroups();
  }

  // Groups in dependency order: a group runs after the groups whose
  // materialized nodes it reads.
  static bool OnlyReshapes(const Node* node) {
    for (; !node->is_realized() && IsView(node->op); node = node->inputs[0].get()) {
      if (node->op != OpKind::kReshape) return false;
    }
    return true;
  }

  void OrderGroups() {
    // Groups emptied by merges go first.
    std::vector<Group> kept;
    std::vector<int> remap(result_.groups.size(), -1);
    for (size_t g = 0; g < result_.groups.size(); ++g) {
      if (result_.groups[g].members.empty()) continue;
      remap[g] = static_cast<int>(kept.size());
      kept.push_back(std::move(result_.groups[g]));
    }
    result_.groups = std::move(kept);
    for (auto& [node, g] : result_.group_of) g = remap[g];
    const int n = static_cast<int>(result_.groups.size());
    std::vector<int> first(n, INT32_MAX);
    for (int g = 0; g < n; ++g) {
      for (const Node* m : result_.groups[g].members) first[g] = std::min(first[g], trace_.IndexOf(m));
    }
    std::vector<std::vector<int>> after(n);  // after[g]: groups that must precede g
    for (int g = 0; g < n; ++g) {
      for (const Node* m : result_.groups[g].members) {
        std::vector<const Node*> stack(1, m);
        absl::flat_hash_set<const Node*> seen;
        while (!stack.empty()) {
          const Node* x = stack.back();
          stack.pop_back();
          for (const auto& in : x->inputs) {
            const Node* i = in.get();
            if (!seen.insert(i).second || i->is_realized()) continue;
            auto it = result_.group_of.find(i);
            if (it != result_.group_of.end() && it->second != g && result_.materialized.contains(i)) {
              after[g].push_back(it->second);
              continue;
            }
            stack.push_back(i);  // views, sources and inlined values
          }
        }
      }
    }
    std::vector<int> order;
    std::vector<int> state(n, 0);
    std::vector<int> by_first(n);
    for (int g = 0; g < n; ++g) by_first[g] = g;
    std::sort(by_first.begin(), by_first.end(), [&](int a, int b) { return first[a] < first[b]; });
    std::function<void(int)> visit = [&](int g) {
      if (state[g] != 0) return;
      state[g] = 1;
      for (int d : after[g]) visit(d);
      state[g] = 2;
      order.push_back(g);
    };
    for (int g : by_first) visit(g);
    std::vector<Group> groups;
    std::vector<int> new_id(n);
    for (int g : order) {
      new_id[g] = static_cast<int>(groups.size());
      groups.push_back(std::move(result_.groups[g]));
    }
    result_.groups = std::move(groups);
    for (auto& [node, g] : result_.group_of) g = new_id[g];
  }

  const Trace& trace_;
  const PartitionOptions& options_;
  absl::flat_hash_map<const Node*, std::vector<const Node*>> consumers_;
  absl::flat_hash_set<const Node*> outputs_;
  absl::flat_hash_set<const Node*> need_buffer_;
  absl::flat_hash_set<const Node*> inlined_;
  Partition result_;
};

}  // namespace

bool ChainHasReshape(const Node* node) {
  for (; !node->is_realized() && IsView(node->op); node = node->inputs[0].get()) {
    if (node->op == OpKind::kReshape) return true;
  }
  return false;
}

const Node* ThroughViews(const Node* node) {
  while (!node->is_realized() && IsView(node->op)) node = node->inputs[0].get();
  return node;
}

bool RecomputedWhereRead(const Node* node) {
  if (node->is_realized()) return false;
  if (IsSource(node->op)) return true;
  if (!IsElementwise(node->op)) return false;
  for (const auto& in : node->inputs) {
    if (!RecomputedWhereRead(ThroughViews(in.get()))) return false;
  }
  return true;
}

Partition PartitionTrace(const Trace& trace, const PartitionOptions& options) {
  return Partitioner(trace, options).Run();
}

}  // namespace kiln::lowering
