#include "optimizer/search/enumerate.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "optimizer/search/op_expr.h"
#include "optimizer/tile_analysis.h"

namespace kiln::search {
namespace {

using ugraph::TileInfo;
using ugraph::TileOp;

// An op's sort key: the canonical order compares these.
using Key = std::tuple<int, int, std::vector<int>, int>;
Key KeyOf(const TileOp& op) {
  return {static_cast<int>(op.kind), static_cast<int>(op.op), op.args, op.axis};
}

class Enumerator {
 public:
  Enumerator(const Region& region, const Schedule& mapping, ExprPool& pool, AbstractChecker& checker,
             const EnumerateLimits& limits, const std::function<bool(const Candidate&)>& found)
      : region_(region), pool_(pool), checker_(checker), limits_(limits), found_(found) {
    candidate_.schedule = mapping;
  }

  EnumerateStats Run() {
    // Leaves: one iterator per region input (or permuted input), the
    // constants, and the normalizations read whole (below).
    std::vector<Dim> sizes = region_.class_size;
    block_.kind = ugraph::BlockKind::kTiled;
    const std::vector<bool> normalization = Normalizations();
    std::vector<bool> read_outside(region_.ops.size(), false);  // by an op the search builds
    for (size_t i = 0; i < region_.ops.size(); ++i) {
      if (normalization[i]) continue;
      for (int a : region_.ops[i].args) read_outside[a] = true;
    }
    read_outside[region_.output_op()] = true;
    // A normalization's result is an opaque leaf to the pruning too: the
    // search cannot reach inside it, and Z3 answers in a fraction of the
    // time without its rsqrt-of-a-sum (QK-norm: 0.3 s instead of 10 s to
    // find plain attention's five ops).
    std::vector<bool> atoms(region_.ops.size(), false);
    for (size_t i = 0; i < region_.ops.size(); ++i) atoms[i] = normalization[i] && read_outside[i];
    // The ops the search builds with: the region's, less the normalizations'.
    for (size_t i = 0; i < region_.ops.size(); ++i) {
      const RegionOp& op = region_.ops[i];
      if (normalization[i]) continue;
      if (op.kind == RegionOp::Kind::kUnary) unary_.insert(op.op);
      if (op.kind == RegionOp::Kind::kBinary) binary_.insert(op.op);
      has_matmul_ |= op.kind == RegionOp::Kind::kMatmul;
      if (op.kind == RegionOp::Kind::kMatmul || (op.kind == RegionOp::Kind::kBinary && op.op == OpKind::kMul)) {
        const RegionOp& a = region_.ops[op.args[0]];
        unit_products_ |= op.kind == RegionOp::Kind::kBinary || region_.class_size[a.classes.back()] == Dim(1);
      }
      if (op.kind == RegionOp::Kind::kStableExp) {
        // (Unmasked ones are all one kind.)
        const StableExpKind kind = {op.mask, op.mask.on() ? static_cast<int>(op.classes.size()) : 0,
                                    op.mask.on() ? op.classes[op.mask.row] : -1,
                                    op.mask.on() ? op.classes[op.mask.col] : -1};
        if (std::find(stable_exps_.begin(), stable_exps_.end(), kind) == stable_exps_.end()) {
          stable_exps_.push_back(kind);
        }
      }
      if (op.kind == RegionOp::Kind::kReduce) {
        const RegionOp& arg = region_.ops[op.args[0]];
        sums_leaves_ |= IsLeaf(op.args[0]) || arg.kind == RegionOp::Kind::kConstant;
      }
    }
    region_exprs_ = RegionExpressions(region_, pool_, atoms);
    target_ = region_exprs_.back();
    std::vector<int> at(region_.ops.size(), -1);  // each region op's fixed op
    for (size_t i = 0; i < region_.ops.size(); ++i) {
      const RegionOp& op = region_.ops[i];
      const bool usable = read_outside[i];
      if (IsLeaf(static_cast<int>(i))) {
        at[i] = AddLeaf(static_cast<int>(i), usable);
      } else if (op.kind == RegionOp::Kind::kConstant) {
        CandidateOp c;
        c.op.kind = TileOp::Kind::kConstant;
        c.op.value = op.value;
        at[i] = AddFixed(std::move(c), pool_.Constant(op.value), usable);
      } else if (normalization[i]) {
        at[i] = AddNormalizationOp(static_cast<int>(i), at, usable);
      } else if (op.kind == RegionOp::Kind::kReduce && op.op == OpKind::kReduceMean) {
        CandidateOp scale = MeanScale(op);
        const ExprId e = pool_.Constant(scale.op.value);
        AddFixed(std::move(scale), e, true);
      }
    }
    leaves_ = static_cast<int>(candidate_.ops.size());
    // The block graph the prefixes are validated in (any tile sizes will do).
    auto instantiated = Instantiate(region_, candidate_, sizes);
    if (!instantiated.ok()) return stats_;
    block_ = instantiated->kernels[0].block;
    // Iterative deepening on the number of ops: the smallest programs come
    // first, so a deadline cuts off only the largest.
    for (level_ = 1; level_ <= limits_.max_loop_ops + limits_.max_post_ops && !OutOfTime(); ++level_) {
      Grow(/*loop=*/true, -1, 0);
    }
    return stats_;
  }

 private:
  bool OnlyPermuted(int input_op) const {
    bool used = false;
    for (const RegionOp& op : region_.ops) {
      for (int a : op.args) {
        if (a != input_op) continue;
        used = true;
        if (op.kind != RegionOp::Kind::kPermute) return false;
      }
    }
    return used;
  }

  // Region op `i` is read through an iterator: an input, or a permute of one
  // (an input read only through permutes has no iterator of its own).
  bool IsLeaf(int i) const {
    const RegionOp& op = region_.ops[i];
    if (op.kind == RegionOp::Kind::kInput) return !OnlyPermuted(i);
    return op.kind == RegionOp::Kind::kPermute && region_.ops[op.args[0]].kind == RegionOp::Kind::kInput;
  }

  // Normalizations (QK-norm's rms of Q and of K) and operand prologues:
  // elementwise ops and keepdim sums over classes the mapping reads whole,
  // on inputs and constants alone, that include a sum or that only
  // products read. Each is computed where its inputs
  // are read, as the region writes it, and the search sees only its
  // result, as a leaf: the ops inside need no search (their reductions are
  // whole, so tiling cannot change them), and searching them too would put
  // attention with QK-norm at three times the ops of plain attention.
  // The region's output is never one: the search must build it.
  std::vector<bool> Normalizations() const {
    const size_t n = region_.ops.size();
    std::vector<bool> local(n, false), sums(n, false);
    for (size_t i = 0; i + 1 < n; ++i) {
      const RegionOp& op = region_.ops[i];
      bool args_local = true, any_variable = false;
      for (int a : op.args) {
        const bool constant = region_.ops[a].kind == RegionOp::Kind::kConstant;
        args_local &= constant || local[a] || IsLeaf(a);
        any_variable |= !constant;
        sums[i] = sums[i] || sums[a];
      }
      if (op.kind == RegionOp::Kind::kUnary || op.kind == RegionOp::Kind::kBinary) {
        local[i] = args_local && any_variable;
      } else if (op.kind == RegionOp::Kind::kReduce) {
        bool whole = op.keepdim;
        for (int axis : op.axes) {
          const int c = region_.ops[op.args[0]].classes[axis];
          whole &= candidate_.schedule.map[c] == Schedule::Map::kFull && region_.class_size[c].is_concrete();
        }
        local[i] = args_local && whole;
        sums[i] = true;
      }
    }
    // The ones with a sum, the ones only products read (an operand's
    // prologue: attention's q scaled by 1/sqrt(d)), and what they read.
    std::vector<bool> out(n, false);
    for (size_t i = n; i-- > 0;) {
      if (!local[i]) continue;
      bool read_by_one = false, read = false, only_by_products = true;
      for (size_t j = i + 1; j < n; ++j) {
        for (int a : region_.ops[j].args) {
          if (a != static_cast<int>(i)) continue;
          read = true;
          read_by_one |= out[j];
          only_by_products &= region_.ops[j].kind == RegionOp::Kind::kMatmul;
        }
      }
      out[i] = sums[i] || read_by_one || (read && only_by_products);
    }
    return out;
  }

  // The 1/n constant of a mean (n the product of its reduced classes).
  CandidateOp MeanScale(const RegionOp& mean) const {
    CandidateOp c;
    c.op.kind = TileOp::Kind::kConstant;
    int64_t n = 1;
    for (int a : mean.axes) {
      const int cls = region_.ops[mean.args[0]].classes[a];
      c.inverse_of_classes.push_back(cls);
      n *= NominalSize(region_.class_size[cls]);
    }
    c.op.value = 1.0 / static_cast<double>(n);
    return c;
  }

  // Region op `i` of a normalization as fixed tile ops (`at`: the fixed op
  // of each region op before it); returns the last.
  int AddNormalizationOp(int i, const std::vector<int>& at, bool usable) {
    const RegionOp& op = region_.ops[i];
    CandidateOp c;
    c.op.op = op.op;
    for (int a : op.args) c.op.args.push_back(at[a]);
    if (op.kind == RegionOp::Kind::kUnary) {
      c.op.kind = TileOp::Kind::kUnary;
      return AddFixed(std::move(c), region_exprs_[i], usable);
    }
    if (op.kind == RegionOp::Kind::kBinary) {
      c.op.kind = TileOp::Kind::kBinary;
      return AddFixed(std::move(c), region_exprs_[i], usable);
    }
    // A keepdim sum (or mean) over whole axes: a sum per axis, then 1/n.
    const bool mean = op.op == OpKind::kReduceMean;
    int last = at[op.args[0]];
    ExprId e = exprs_[last];
    for (size_t k = 0; k < op.axes.size(); ++k) {
      CandidateOp sum;
      sum.op.kind = TileOp::Kind::kReduceSum;
      sum.op.args = {last};
      sum.op.axis = op.axes[k];
      const int cls = region_.ops[op.args[0]].classes[op.axes[k]];
      e = pool_.Sum(MakeRational(NominalSize(region_.class_size[cls]), 1), e);
      const bool final = !mean && k + 1 == op.axes.size();
      last = AddFixed(std::move(sum), final ? region_exprs_[i] : e, final && usable);
    }
    if (!mean) return last;
    CandidateOp scale = MeanScale(op);
    const ExprId scale_expr = pool_.Constant(scale.op.value);
    CandidateOp mul;
    mul.op.kind = TileOp::Kind::kBinary;
    mul.op.op = OpKind::kMul;
    mul.op.args = {last, AddFixed(std::move(scale), scale_expr, false)};
    return AddFixed(std::move(mul), region_exprs_[i], usable);
  }

  // An iterator of its own for each leaf, even where two share an
  // expression (an input and its transpose, as MLA reads its latent cache
  // for both the scores and the values): their tiles differ.
  int AddLeaf(int region_op, bool usable) {
    CandidateOp c;
    c.op.kind = TileOp::Kind::kInput;
    c.op.input = static_cast<int>(candidate_.iterator_ops.size());
    candidate_.iterator_ops.push_back(region_op);
    candidate_.ops.push_back(std::move(c));
    exprs_.push_back(region_exprs_[region_op]);
    usable_.push_back(usable);
    return static_cast<int>(candidate_.ops.size()) - 1;
  }

  // Adds a fixed op (a leaf the search builds on, if `usable`); an op
  // already there with the same expression serves instead.
  int AddFixed(CandidateOp op, ExprId e, bool usable) {
    for (size_t i = 0; i < candidate_.ops.size(); ++i) {
      if (exprs_[i] != e) continue;
      usable_[i] = usable_[i] || usable;
      return static_cast<int>(i);
    }
    candidate_.ops.push_back(std::move(op));
    exprs_.push_back(e);
    usable_.push_back(usable);
    return static_cast<int>(candidate_.ops.size()) - 1;
  }

  // Whether the search may build on op `a` (a fixed op inside a
  // normalization is not).
  bool Usable(int a) const { return a >= leaves_ || usable_[a]; }

  bool OutOfTime() {
    if ((++ticks_ & 63) == 0 && std::chrono::steady_clock::now() > limits_.deadline) stats_.out_of_time = true;
    return stats_.out_of_time || stopped_;
  }

  // Tries `op` on top of the current program; on success recurses.
  void Try(TileOp op, bool loop, int last, int count) {
    if (OutOfTime()) return;
    const int n = static_cast<int>(candidate_.ops.size());
    // An op on constants alone is a constant the program does not need.
    bool all_constant = true;
    for (int a : op.args) all_constant &= candidate_.ops[a].op.kind == TileOp::Kind::kConstant;
    if (all_constant) return;
    // Canonical order: read the previous op or sort after it; never repeat an op.
    if (last >= 0 && std::find(op.args.begin(), op.args.end(), last) == op.args.end() &&
        !(KeyOf(candidate_.ops[last].op) < KeyOf(op))) {
      return;
    }
    for (int i = leaves_; i < n; ++i) {
      if (KeyOf(candidate_.ops[i].op) == KeyOf(op) && candidate_.ops[i].op.dtype == op.dtype) return;
    }
    if (!CanFinishAtLevel(op)) return;
    block_.tile_ops.push_back(op);
    ++stats_.prefixes;
    auto tiles = ugraph::AnalyzeTiles(block_);
    const bool valid = tiles.ok() && ((*tiles)[n].in_loop == (loop && op.kind != TileOp::Kind::kAccumulate) ||
                                      (loop && BeforeLoop((*tiles)[n])));
    if (!valid) {
      ++stats_.invalid;
      block_.tile_ops.pop_back();
      return;
    }
    const ExprId e = ExprOf(op, (*tiles));
    bool redundant = false;
    for (int i = 0; i < n; ++i) redundant |= exprs_[i] == e && candidate_.ops[i].op.kind != TileOp::Kind::kAccumulate;
    if (redundant || !checker_.IsSubexpression(e, target_)) {
      ++stats_.pruned;
      block_.tile_ops.pop_back();
      return;
    }
    candidate_.ops.push_back({op, {}});
    exprs_.push_back(e);
    tiles_ = *std::move(tiles);
    if (!loop && Completes(n)) Emit(n);
    // (A product before the loop is not one of the loop body's ops.)
    Grow(loop, n, count + (loop && BeforeLoop(tiles_[n]) ? 0 : 1));
    candidate_.ops.pop_back();
    exprs_.pop_back();
    block_.tile_ops.pop_back();
  }

  // Whether a program of this level's size can still grow from the
  // current one with `op` added. Every op but the output must be read (a
  // program with a dead op is enumerated without it), and each op to come
  // takes at most one unread op away: it reads two at most and is unread
  // itself (an accumulator, which is free, reads one). So the unread ops
  // less the ops left may be one at most. The prefixes this turns away grow
  // at a later level, where they can finish.
  bool CanFinishAtLevel(const TileOp& op) const {
    const int n = static_cast<int>(candidate_.ops.size());
    std::vector<bool> read(n, false);
    for (int i = leaves_; i < n; ++i) {
      for (int a : candidate_.ops[i].op.args) read[a] = true;
    }
    for (int a : op.args) read[a] = true;
    int unread = 1;  // op itself
    for (int i = leaves_; i < n; ++i) unread += read[i] ? 0 : 1;
    const int left = level_ - OpsUsed() - 1;
    return unread - left <= 1;
  }

  ExprId ExprOf(const TileOp& op, const std::vector<TileInfo>& tiles) {
    auto arg = [&](int k) { return exprs_[op.args[k]]; };
    switch (op.kind) {
      case TileOp::Kind::kUnary: return UnaryExpr(pool_, op.op, arg(0));
      case TileOp::Kind::kBinary: return BinaryExpr(pool_, op.op, arg(0), arg(1));
      case TileOp::Kind::kMatmul: {
        const TileInfo& a = tiles[op.args[0]];
        return pool_.Sum(MakeRational(AxisCount(a.axes.back()), 1), pool_.Mul(arg(0), arg(1)));
      }
      case TileOp::Kind::kReduceSum:
        return pool_.Sum(MakeRational(AxisCount(tiles[op.args[0]].axes[op.axis]), 1), arg(0));
      case TileOp::Kind::kStableExp: return StableExpExpr(pool_, arg(0), op.mask);  // as the region's
      case TileOp::Kind::kAccumulate: {
        const Schedule& s = candidate_.schedule;
        for (size_t c = 0; c < s.map.size(); ++c) {
          if (s.map[c] == Schedule::Map::kLoop) {
            return pool_.Sum(MakeRational(NominalSize(region_.class_size[c]), s.tile[c]), arg(0));
          }
        }
        return arg(0);
      }
      default: return arg(0);
    }
  }

  // Elements a reduction over this axis sums: the loop tile, or the whole dim.
  int64_t AxisCount(const ugraph::TileAxis& a) const {
    const bool summed = a.source == ugraph::TileAxis::Source::kFull || a.source == ugraph::TileAxis::Source::kLoop;
    return summed ? a.size : 1;
  }

  bool Completes(int op) {
    const TileInfo& t = tiles_[op];
    const auto& out = region_.ops[region_.output_op()].classes;
    if (t.axes.size() != out.size()) return false;
    for (size_t d = 0; d < out.size(); ++d) {
      const Schedule& s = candidate_.schedule;
      const int c = out[d];
      const auto src = t.axes[d].source;
      const bool unit = region_.class_size[c] == Dim(1);
      if (unit ? src != ugraph::TileAxis::Source::kOne
               : s.map[c] == Schedule::Map::kGrid ? src != ugraph::TileAxis::Source::kGrid
                                                  : src != ugraph::TileAxis::Source::kFull) {
        return false;
      }
    }
    return exprs_[op] == target_ || checker_.Equivalent(exprs_[op], target_);
  }

  // Hands out the program ending at `out` with the ops it does not use removed.
  // Ops the program computes, not counting leaves and accumulators.
  int OpsUsed() const {
    int n = 0;
    for (size_t i = leaves_; i < candidate_.ops.size(); ++i) {
      n += candidate_.ops[i].op.kind != TileOp::Kind::kAccumulate;
    }
    return n;
  }

  void Emit(int out) {
    if (OpsUsed() != level_) return;  // emitted at its own level
    std::vector<bool> used(candidate_.ops.size(), false);
    used[out] = true;
    for (int i = out; i >= 0; --i) {
      if (!used[i]) continue;
      for (int a : candidate_.ops[i].op.args) used[a] = true;
    }
    for (int i = leaves_; i < out; ++i) {
      if (!used[i]) return;  // a dead op: the same program without it is enumerated too
    }
    Candidate c;
    c.schedule = candidate_.schedule;
    std::vector<int> remap(candidate_.ops.size(), -1);
    std::vector<int> iterators;
    for (int i = 0; i <= out; ++i) {
      if (!used[i]) continue;
      CandidateOp op = candidate_.ops[i];
      for (int& a : op.op.args) a = remap[a];
      if (op.op.rescale >= 0) op.op.rescale = remap[op.op.rescale];
      if (op.op.kind == TileOp::Kind::kInput) {
        iterators.push_back(candidate_.iterator_ops[op.op.input]);
        op.op.input = static_cast<int>(iterators.size()) - 1;
      }
      remap[i] = static_cast<int>(c.ops.size());
      c.ops.push_back(std::move(op));
    }
    c.iterator_ops = std::move(iterators);
    c.output = remap[out];
    ++stats_.complete;
    if (!found_(c)) stopped_ = true;
  }

  void Grow(bool loop, int last, int count) {
    if (OutOfTime()) return;
    const int n = static_cast<int>(candidate_.ops.size());
    if (loop && count > 0) EnterPostLoop(last);
    if (loop && !HasLoop()) {
      Grow(false, -1, 0);
      return;
    }
    if (count >= (loop ? limits_.max_loop_ops : limits_.max_post_ops)) return;
    if (OpsUsed() >= level_) return;
    auto phase_ok = [&](const std::vector<int>& args) {
      bool any_loop = false;
      for (int a : args) any_loop |= tiles_[a].in_loop;
      return loop ? any_loop : !any_loop;
    };
    // A product of tiles that need no loop step is computed once before
    // the loop (MLA's absorbed query, q W_uk^T); grown among the loop's ops.
    auto before_loop = [&](int a, int b) { return loop && BeforeLoop(tiles_[a]) && BeforeLoop(tiles_[b]); };
    if (tiles_.size() < static_cast<size_t>(n)) {
      auto tiles = ugraph::AnalyzeTiles(block_);
      if (!tiles.ok()) return;
      tiles_ = *std::move(tiles);
    }
    for (int a = 0; a < n; ++a) {
      if (!Usable(a)) continue;
      // A product with `a` on the left sums over its last axis.
      const bool product = has_matmul_ && (unit_products_ || AxisCount(tiles_[a].axes.back()) > 1);
      for (OpKind u : unary_) {
        if (phase_ok({a})) Try(Unary(u, a), loop, last, count);
      }
      for (size_t axis = 0; axis < tiles_[a].axes.size(); ++axis) {
        const auto src = tiles_[a].axes[axis].source;
        if (src != ugraph::TileAxis::Source::kLoop && src != ugraph::TileAxis::Source::kFull) continue;
        if (!phase_ok({a})) continue;
        if (a >= leaves_ || sums_leaves_) {
          TileOp op;
          op.kind = TileOp::Kind::kReduceSum;
          op.args = {a};
          op.axis = static_cast<int>(axis);
          Try(op, loop, last, count);
        }
        for (const StableExpKind& kind : stable_exps_) {
          TileOp op;
          op.kind = TileOp::Kind::kStableExp;
          op.args = {a};
          op.axis = static_cast<int>(axis);
          if (kind.mask.on() && !PlaceMask(kind, tiles_[a], &op)) continue;
          Try(op, loop, last, count);
        }
      }
      for (int b = 0; b < n; ++b) {
        if (!Usable(b)) continue;
        if (product && before_loop(a, b)) {
          TileOp t;
          t.kind = TileOp::Kind::kMatmul;
          t.args = {a, b};
          t.dtype = MatmulDType();
          Try(t, loop, last, count);
        }
        if (!phase_ok({a, b})) continue;
        for (OpKind op : binary_) {
          const bool commutative = op == OpKind::kAdd || op == OpKind::kMul || op == OpKind::kMaximum ||
                                   op == OpKind::kMinimum;
          if (commutative && b < a) continue;
          TileOp t;
          t.kind = TileOp::Kind::kBinary;
          t.op = op;
          t.args = {a, b};
          Try(t, loop, last, count);
        }
        if (product) {
          TileOp t;
          t.kind = TileOp::Kind::kMatmul;
          t.args = {a, b};
          t.dtype = MatmulDType();
          Try(t, loop, last, count);
        }
      }
    }
  }

  static bool BeforeLoop(const TileInfo& t) { return !t.in_loop && !t.after_loop; }

  bool HasLoop() const {
    for (Schedule::Map m : candidate_.schedule.map) {
      if (m == Schedule::Map::kLoop) return true;
    }
    return false;
  }

  // Accumulates every loop-body tile that no other loop op reads and that
  // has no loop axis left, then grows the post-loop program.
  void EnterPostLoop(int last) {
    const int n = static_cast<int>(candidate_.ops.size());
    std::vector<bool> read(n, false);
    for (int i = leaves_; i < n; ++i) {
      for (int a : candidate_.ops[i].op.args) read[a] = true;
    }
    const size_t mark = candidate_.ops.size();
    bool ok = true;
    int accumulators = 0;
    for (int i = leaves_; i < n && ok; ++i) {
      if (read[i] || !tiles_[i].in_loop) continue;
      TileOp acc;
      acc.kind = TileOp::Kind::kAccumulate;
      acc.args = {i};
      // A sum of values taken against a running max follows it.
      const std::vector<int> shifts = RunningShifts(i);
      if (shifts.size() > 1) {
        ok = false;
        break;
      }
      if (!shifts.empty()) acc.rescale = shifts[0];
      block_.tile_ops.push_back(acc);
      auto tiles = ugraph::AnalyzeTiles(block_);
      if (!tiles.ok()) {
        block_.tile_ops.pop_back();
        ok = false;
        break;
      }
      const ExprId e = ExprOf(acc, *tiles);
      if (!checker_.IsSubexpression(e, target_)) {
        ++stats_.pruned;
        block_.tile_ops.pop_back();
        ok = false;
        break;
      }
      candidate_.ops.push_back({acc, {}});
      exprs_.push_back(e);
      tiles_ = *std::move(tiles);
      ++accumulators;
      if (Completes(static_cast<int>(candidate_.ops.size()) - 1)) Emit(static_cast<int>(candidate_.ops.size()) - 1);
    }
    if (ok && accumulators > 0) Grow(false, -1, 0);
    while (candidate_.ops.size() > mark) {
      candidate_.ops.pop_back();
      exprs_.pop_back();
      block_.tile_ops.pop_back();
    }
    tiles_.resize(mark);
  }

  // The stable exps along the loop axis that loop op `x` reads, directly
  // or through other loop ops.
  std::vector<int> RunningShifts(int x) const {
    std::set<int> found;
    std::vector<int> stack = {x};
    std::vector<bool> seen(candidate_.ops.size(), false);
    while (!stack.empty()) {
      const int y = stack.back();
      stack.pop_back();
      if (seen[y] || !tiles_[y].in_loop) continue;
      seen[y] = true;
      if (ugraph::IsRunningMax(block_, tiles_, y)) found.insert(y);
      for (int a : candidate_.ops[y].op.args) stack.push_back(a);
    }
    return {found.begin(), found.end()};
  }

  DType MatmulDType() const {
    DType widest = DType::kF16;
    for (DType d : region_.input_dtypes) {
      if (d == DType::kF32) return DType::kF32;
      if (d == DType::kBF16) widest = DType::kBF16;
    }
    return widest;
  }

  static TileOp Unary(OpKind u, int a) {
    TileOp op;
    op.kind = TileOp::Kind::kUnary;
    op.op = u;
    op.args = {a};
    return op;
  }

  const Region& region_;
  ExprPool& pool_;
  AbstractChecker& checker_;
  const EnumerateLimits& limits_;
  const std::function<bool(const Candidate&)>& found_;
  Candidate candidate_;
  ugraph::BlockGraph block_;
  std::vector<TileInfo> tiles_;
  std::vector<ExprId> exprs_;
  std::vector<bool> usable_;  // by fixed op
  std::vector<ExprId> region_exprs_;
  ExprId target_ = 0;
  int leaves_ = 0;
  std::set<OpKind> unary_, binary_;
  bool has_matmul_ = false;
  // The kinds of stable exp the region has: its causal mask (or none), on
  // a result of `rank` axes, the mask's rows and keys of these classes.
  struct StableExpKind {
    ugraph::CausalMask mask;
    int rank = 0, row_class = -1, col_class = -1;
    friend bool operator==(const StableExpKind&, const StableExpKind&) = default;
  };
  std::vector<StableExpKind> stable_exps_;

  // Puts the mask of `kind` on stable exp `op` over tile `t`: the region's
  // axes aligned right in the tile, where the tile's axes there cover the
  // mask's classes as the mapping places them, and its keys are the
  // max's axis. False where they do not.
  bool PlaceMask(const StableExpKind& kind, const TileInfo& t, TileOp* op) const {
    const int lead = static_cast<int>(t.axes.size()) - kind.rank;
    op->mask = kind.mask;
    op->mask.row += lead;
    op->mask.col += lead;
    if (op->mask.row < 0 || op->mask.col != op->axis) return false;
    return Covers(t.axes[op->mask.row], kind.row_class) && Covers(t.axes[op->mask.col], kind.col_class);
  }

  // Whether tile axis `a` covers class c whole, the way the mapping places c.
  bool Covers(const ugraph::TileAxis& a, int c) const {
    const Schedule& s = candidate_.schedule;
    using Source = ugraph::TileAxis::Source;
    switch (s.map[c]) {
      case Schedule::Map::kGrid: return a.source == Source::kGrid && a.grid_axis == s.grid_axis[c];
      case Schedule::Map::kLoop: return a.source == Source::kLoop;
      case Schedule::Map::kFull: return a.source == Source::kFull && a.extent == region_.class_size[c];
    }
    return false;
  }
  // Whether the region multiplies elementwise, or by a matmul over one
  // element (an outer product). If not, no program does: a matmul whose
  // reduction sums one element is such a product, and the abstraction,
  // which lets sum(n, x) * y be sum(n, x * y), passes the products of most
  // pairs of a program's tiles (MLA's accumulators with its absorbed query
  // and each other: four fifths of its search's time in Z3).
  bool unit_products_ = false;
  // Whether the region sums an input itself; if not, no program sums a leaf
  // (the abstract expressions drop which axes vary, so the pruning lets a
  // sum of any input pass as a subexpression of a sum of products).
  bool sums_leaves_ = false;
  EnumerateStats stats_;
  int64_t ticks_ = 0;
  int level_ = 0;
  bool stopped_ = false;
};

}  // namespace

EnumerateStats EnumeratePrograms(const Region& region, const Schedule& mapping, ExprPool& pool,
                                 AbstractChecker& checker, const EnumerateLimits& limits,
                                 const std::function<bool(const Candidate&)>& found) {
  return Enumerator(region, mapping, pool, checker, limits, found).Run();
}

}  // namespace kiln::search
