// The filters over sequences and mappings. Where jinja2 returns a generator
// (map, select, batch, ...) the result is a kIterator list: computed at
// once, but true when empty, without len() and exhausted by one pass, as
// the generator is.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "models/chat/jinja_args.h"
#include "models/chat/jinja_builtins.h"
#include "models/chat/jinja_filters_impl.h"
#include "models/chat/jinja_unicode.h"

namespace kiln::models::jinja {
namespace {

absl::Status TypeError(std::string m) { return absl::InvalidArgumentError(std::move(m)); }

Value Generator(std::vector<Value> items) { return Value::List(std::move(items), SeqKind::kIterator); }

absl::StatusOr<std::vector<Value>> Items(CallContext& ctx, const Value& v) {
  absl::StatusOr<std::vector<Value>> items = Iterate(v);
  if (items.ok()) {
    if (absl::Status s = ctx.Charge(items->size()); !s.ok()) return s;
  }
  return items;
}

std::vector<Value> AttributeParts(const Value& attribute) {
  std::vector<Value> parts;
  if (attribute.is_none() || attribute.is_undefined()) return parts;
  if (!attribute.is_string()) return {attribute};
  for (absl::string_view part : absl::StrSplit(attribute.str(), '.')) {
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
      return c >= '0' && c <= '9';
    });
    if (digits && part.size() < 18) {
      parts.push_back(Value::Int(std::stoll(std::string(part))));
    } else {
      parts.push_back(Value::String(std::string(part)));
    }
  }
  return parts;
}

// sort's multi-attribute key: "a,b" compares [a, b].
std::function<Value(const Value&)> MakeMultiAttrGetter(const Value& attribute, bool lower) {
  std::vector<AttrGetter> getters;
  if (attribute.is_string()) {
    for (absl::string_view part : absl::StrSplit(attribute.str(), ',')) {
      getters.push_back(MakeAttrGetter(Value::String(std::string(part)), nullptr, lower));
    }
  } else {
    getters.push_back(MakeAttrGetter(attribute, nullptr, lower));
  }
  return [getters](const Value& item) {
    std::vector<Value> keys;
    for (const AttrGetter& g : getters) keys.push_back(g(item));
    return Value::List(std::move(keys));
  };
}

// select/reject and their attr forms: the predicate an item must pass.
absl::StatusOr<std::function<absl::StatusOr<bool>(const Value&)>> SelectPredicate(
    CallContext& ctx, CallArgs& args, bool lookup_attr, bool keep_when) {
  size_t off = 0;
  AttrGetter transform = [](const Value& v) { return v; };
  if (lookup_attr) {
    if (args.positional.empty()) return TypeError("Missing parameter for attribute name");
    transform = MakeAttrGetter(args.positional[0], nullptr, false);
    off = 1;
  }
  if (args.positional.size() <= off) {
    return std::function<absl::StatusOr<bool>(const Value&)>(
        [transform, keep_when](const Value& item) -> absl::StatusOr<bool> {
          return Truthy(transform(item)) == keep_when;
        });
  }
  if (!args.positional[off].is_string()) return TypeError("the test name must be a string");
  const std::string name = args.positional[off].str();
  CallArgs test_args;
  test_args.positional.assign(args.positional.begin() + static_cast<ptrdiff_t>(off + 1),
                              args.positional.end());
  test_args.keyword = args.keyword;
  return std::function<absl::StatusOr<bool>(const Value&)>(
      [&ctx, transform, name, test_args, keep_when](const Value& item) -> absl::StatusOr<bool> {
        absl::StatusOr<bool> r = ctx.ApplyTest(name, transform(item), test_args);
        if (!r.ok()) return r.status();
        return *r == keep_when;
      });
}

absl::StatusOr<Value> SelectOrReject(CallContext& ctx, const Value& input, CallArgs& args,
                                     bool lookup_attr, bool keep_when) {
  if (!Truthy(input)) return Generator({});
  absl::StatusOr<std::function<absl::StatusOr<bool>(const Value&)>> pred =
      SelectPredicate(ctx, args, lookup_attr, keep_when);
  if (!pred.ok()) return pred.status();
  absl::StatusOr<std::vector<Value>> items = Items(ctx, input);
  if (!items.ok()) return items.status();
  std::vector<Value> out;
  for (const Value& item : *items) {
    absl::StatusOr<bool> keep = (*pred)(item);
    if (!keep.ok()) return keep.status();
    if (*keep) out.push_back(item);
  }
  return Generator(std::move(out));
}

// min and max: the first item whose key is smallest (largest).
absl::StatusOr<Value> Extreme(CallContext& ctx, const Value& input, CallArgs& args, bool want_max) {
  ArgBinder a(want_max ? "filter 'max'" : "filter 'min'", args, {"case_sensitive", "attribute"});
  if (!a.ok()) return a.status();
  absl::StatusOr<std::vector<Value>> items = Items(ctx, input);
  if (!items.ok()) return items.status();
  if (items->empty()) return Value::Undefined("No aggregated item, sequence was empty.");
  const AttrGetter key =
      MakeAttrGetter(a.get(1, Value::None()), nullptr, !(a.has(0) && Truthy(a[0])));
  size_t best = 0;
  Value best_key = key((*items)[0]);
  for (size_t i = 1; i < items->size(); ++i) {
    Value k = key((*items)[i]);
    absl::StatusOr<int> c = Compare(k, best_key, want_max ? ">" : "<");
    if (!c.ok()) return c.status();
    if (want_max ? *c > 0 : *c < 0) {
      best = i;
      best_key = std::move(k);
    }
  }
  return (*items)[best];
}

}  // namespace

Value IgnoreCase(const Value& v) { return v.is_string() ? Value::String(Lower(v.str())) : v; }

AttrGetter MakeAttrGetter(const Value& attribute, const Value* default_value, bool lower) {
  std::vector<Value> parts = AttributeParts(attribute);
  std::optional<Value> fallback;
  if (default_value != nullptr && !default_value->is_none()) fallback = *default_value;
  return [parts, fallback, lower](const Value& item) {
    Value v = item;
    for (const Value& part : parts) {
      v = GetItem(v, part);
      if (fallback && v.is_undefined()) v = *fallback;
    }
    return lower ? IgnoreCase(v) : v;
  };
}

absl::Status SortValues(std::vector<Value>* items, const std::function<Value(const Value&)>& key,
                        bool reverse) {
  std::vector<std::pair<Value, size_t>> keyed;
  keyed.reserve(items->size());
  for (size_t i = 0; i < items->size(); ++i) keyed.emplace_back(key((*items)[i]), i);
  absl::Status error;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    absl::StatusOr<int> c = reverse ? Compare(y.first, x.first, "<") : Compare(x.first, y.first, "<");
    if (!c.ok()) {
      if (error.ok()) error = c.status();
      return false;
    }
    return *c < 0;
  });
  if (!error.ok()) return error;
  std::vector<Value> sorted;
  sorted.reserve(items->size());
  for (const auto& [k, i] : keyed) sorted.push_back((*items)[i]);
  *items = std::move(sorted);
  return absl::OkStatus();
}

KILN_JINJA_FILTER(FilterBatch) {
  ArgBinder a("filter 'batch'", args, {"linecount", "fill_with"});
  if (!a.ok()) return a.status();
  if (absl::Status s = a.Require(1); !s.ok()) return s;
  absl::StatusOr<int64_t> count = IntArg(a[0], "filter 'batch' linecount");
  if (!count.ok()) return count.status();
  absl::StatusOr<std::vector<Value>> items = Items(ctx, input);
  if (!items.ok()) return items.status();
  std::vector<Value> batches, current;
  for (const Value& item : *items) {
    if (static_cast<int64_t>(current.size()) == *count) {
      batches.push_back(Value::List(std::move(current)));
      current.clear();
    }
    current.push_back(item);
  }
  if (!current.empty()) {
    if (a.has(1) && !a[1].is_none()) {
      while (static_cast<int64_t>(current.size()) < *count) current.push_back(a[1]);
    }
    batches.push_back(Value::List(std::move(current)));
  }
  return Generator(std::move(batches));
}

KILN_JINJA_FILTER(FilterSlice) {
  ArgBinder a("filter 'slice'", args, {"slices", "fill_with"});
  if (!a.ok()) return a.status();
  if (absl::Status s = a.Require(1); !s.ok()) return s;
  absl::StatusOr<int64_t> slices = IntArg(a[0], "filter 'slice' slices");
  if (!slices.ok()) return slices.status();
  if (*slices <= 0) return TypeError("integer division or modulo by zero");
  absl::StatusOr<std::vector<Value>> seq = Items(ctx, input);
  if (!seq.ok()) return seq.status();
  if (absl::Status s = ctx.CheckSize(static_cast<size_t>(std::min<int64_t>(*slices, 1 << 30)) * sizeof(Value)); !s.ok())
    return s;
  const int64_t length = static_cast<int64_t>(seq->size());
  const int64_t per = length / *slices;
  const int64_t extra = length % *slices;
  int64_t offset = 0;
  std::vector<Value> out;
  for (int64_t n = 0; n < *slices; ++n) {
    const int64_t start = offset + n * per;
    if (n < extra) ++offset;
    const int64_t end = offset + (n + 1) * per;
    std::vector<Value> part(seq->begin() + start, seq->begin() + end);
    if (a.has(1) && !a[1].is_none() && n >= extra) part.push_back(a[1]);
    out.push_back(Value::List(std::move(part)));
  }
  return Generator(std::move(out));
}

KILN_JINJA_FILTER(FilterDictsort) {
  ArgBinder a("filter 'dictsort'", args, {"case_sensitive", "by", "reverse"});
  if (!a.ok()) return a.status();
  const Value by = a.get(1, Value::String("key"));
  if (!by.is_string() || (by.str() != "key" && by.str() != "value")) {
    return TypeError("You can only sort by either \"key\" or \"value\"");
  }
  if (!input.is_dict()) {
    return TypeError(absl::StrCat("'", TypeName(input), "' object has no attribute 'items'"));
  }
  std::vector<Value> items;
  for (const auto& [k, v] : input.dict().entries()) items.push_back(Value::Tuple({k, v}));
  const size_t pos = by.str() == "key" ? 0 : 1;
  const bool case_sensitive = a.has(0) && Truthy(a[0]);
  if (absl::Status s = SortValues(&items, [&](const Value& item) {
        const Value& v = item.items()[pos];
        return case_sensitive ? v : IgnoreCase(v);
      }, a.has(2) && Truthy(a[2]));
      !s.ok()) {
    return s;
  }
  return Value::List(std::move(items));
}

KILN_JINJA_FILTER(FilterFirst) {
  if (absl::Status s = NoArgs(args, "filter 'first'"); !s.ok()) return s;
  if (input.is_list() && input.seq_kind() == SeqKind::kIterator) {
    const ListData& data = input.list();
    if (data.cursor >= data.items.size()) return Value::Undefined("No first item, sequence was empty.");
    return data.items[data.cursor++];
  }
  absl::StatusOr<std::vector<Value>> items = Items(ctx, input);
  if (!items.ok()) return items.status();
  if (items->empty()) return Value::Undefined("No first item, sequence was empty.");
  return items->front();
}

KILN_JINJA_FILTER(FilterLast) {
  if (absl::Status s = NoArgs(args, "filter 'last'"); !s.ok()) return s;
  const bool reversible = input.is_undefined() || input.is_string() || input.is_dict() ||
                          (input.is_list() && input.seq_kind() != SeqKind::kIterator);
  if (!reversible) return TypeError(absl::StrCat("'", TypeName(input), "' object is not reversible"));
  absl::StatusOr<std::vector<Value>> items = Items(ctx, input);
  if (!items.ok()) return items.status();
  if (items->empty()) return Value::Undefined("No last item, sequence was empty.");
  return items->back();
}

KILN_JINJA_FILTER(FilterItems) {
  if (absl::Status s = NoArgs(args, "filter 'items'"); !s.ok()) return s;
  if (input.is_undefined()) return Generator({});
  if (!input.is_dict()) return TypeError("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, v] : input.dict().entries()) out.push_back(Value::Tuple({k, v}));
  return Generator(std::move(out));
}

KILN_JINJA_FILTER(FilterJoin) {
  ArgBinder a("filter 'join'", args, {"d", "attribute"});
  if (!a.ok()) return a.status();
  const std::string sep = Str(a.get(0, Value::String("")));
  absl::StatusOr<std::vector<Value>> items = Items(ctx, input);
  if (!items.ok()) return items.status();
  const AttrGetter get = MakeAttrGetter(a.get(1, Value::None()), nullptr, false);
  std::string out;
  for (size_t i = 0; i < items->size(); ++i) {
    if (i > 0) out += sep;
    AppendStr(get((*items)[i]), &out);
    if (absl::Status s = ctx.CheckSize(out.size()); !s.ok()) return s;
  }
  return Value::String(std::move(out));
}

KILN_JINJA_FILTER(FilterList) {
  if (absl::Status s = NoArgs(args, "filter 'list'"); !s.ok()) return s;
  absl::StatusOr<std::vector<Value>> items = Items(ctx, input);
  if (!items.ok()) return items.status();
  return Value::List(*std::move(items));
}

KILN_JINJA_FILTER(FilterMap) {
  if (!Truthy(input)) return Generator({});
  AttrGetter func;
  std::string filter;
  CallArgs filter_args;
  const bool by_attribute = args.positional.empty() &&
                            std::any_of(args.keyword.begin(), args.keyword.end(),
                                        [](const auto& kv) { return kv.first == "attribute"; });
  if (by_attribute) {
    Value attribute, fallback = Value::None();
    for (const auto& [k, v] : args.keyword) {
      if (k == "attribute") {
        attribute = v;
      } else if (k == "default") {
        fallback = v;
      } else {
        return TypeError(absl::StrCat("Unexpected keyword argument '", k, "'"));
      }
    }
    func = MakeAttrGetter(attribute, &fallback, false);
  } else {
    if (args.positional.empty()) return TypeError("map requires a filter argument");
    if (!args.positional[0].is_string()) return TypeError("the filter name must be a string");
    filter = args.positional[0].str();
    filter_args.positional.assign(args.positional.begin() + 1, args.positional.end());
    filter_args.keyword = args.keyword;
  }
  absl::StatusOr<std::vector<Value>> items = Items(ctx, input);
  if (!items.ok()) return items.status();
  std::vector<Value> out;
  out.reserve(items->size());
  for (const Value& item : *items) {
    if (func) {
      out.push_back(func(item));
      continue;
    }
    absl::StatusOr<Value> v = ctx.ApplyFilter(filter, item, filter_args);
    if (!v.ok()) return v.status();
    out.push_back(*std::move(v));
  }
  return Generator(std::move(out));
}

KILN_JINJA_FILTER(FilterMax) { return Extreme(ctx, input, args, true); }
KILN_JINJA_FILTER(FilterMin) { return Extreme(ctx, input, args, false); }
KILN_JINJA_FILTER(FilterSelect) { return SelectOrReject(ctx, input, args, false, true); }
KILN_JINJA_FILTER(FilterReject) { return SelectOrReject(ctx, input, args, false, false); }
KILN_JINJA_FILTER(FilterSelectattr) { return SelectOrReject(ctx, input, args, true, true); }
KILN_JINJA_FILTER(FilterRejectattr) { return SelectOrReject(ctx, input, args, true, false); }

KILN_JINJA_FILTER(FilterReverse) {
  if (absl::Status s = NoArgs(args, "filter 'reverse'"); !s.ok()) return s;
  if (input.is_string()) {
    std::u32string s = Decode(input.str());
    std::reverse(s.begin(), s.end());
    return input.markup() ? Value::Markup(Encode(s)) : Value::String(Encode(s));
  }
  const bool generator = input.is_list() && input.seq_kind() == SeqKind::kIterator;
  if (!input.is_undefined() && !input.is_dict() && !input.is_list()) {
    return TypeError("argument must be iterable");
  }
  absl::StatusOr<std::vector<Value>> items = Items(ctx, input);
  if (!items.ok()) return items.status();
  std::reverse(items->begin(), items->end());
  // reversed() where Python has it; a generator becomes a reversed list.
  return generator ? Value::List(*std::move(items)) : Generator(*std::move(items));
}

KILN_JINJA_FILTER(FilterSort) {
  ArgBinder a("filter 'sort'", args, {"reverse", "case_sensitive", "attribute"});
  if (!a.ok()) return a.status();
  absl::StatusOr<std::vector<Value>> items = Items(ctx, input);
  if (!items.ok()) return items.status();
  const bool case_sensitive = a.has(1) && Truthy(a[1]);
  if (absl::Status s = SortValues(&*items, MakeMultiAttrGetter(a.get(2, Value::None()), !case_sensitive),
                                  a.has(0) && Truthy(a[0]));
      !s.ok()) {
    return s;
  }
  return Value::List(*std::move(items));
}

KILN_JINJA_FILTER(FilterSum) {
  ArgBinder a("filter 'sum'", args, {"attribute", "start"});
  if (!a.ok()) return a.status();
  Value total = a.get(1, Value::Int(0));
  if (total.is_string()) return TypeError("sum() can't sum strings [use ''.join(seq) instead]");
  absl::StatusOr<std::vector<Value>> items = Items(ctx, input);
  if (!items.ok()) return items.status();
  const AttrGetter get = MakeAttrGetter(a.get(0, Value::None()), nullptr, false);
  for (const Value& item : *items) {
    absl::StatusOr<Value> next = BinaryOperation(ctx, BinaryOp::kAdd, total, get(item));
    if (!next.ok()) return next.status();
    total = *std::move(next);
  }
  return total;
}

KILN_JINJA_FILTER(FilterUnique) {
  ArgBinder a("filter 'unique'", args, {"case_sensitive", "attribute"});
  if (!a.ok()) return a.status();
  absl::StatusOr<std::vector<Value>> items = Items(ctx, input);
  if (!items.ok()) return items.status();
  const AttrGetter key = MakeAttrGetter(a.get(1, Value::None()), nullptr, !(a.has(0) && Truthy(a[0])));
  std::vector<Value> seen, out;
  for (const Value& item : *items) {
    Value k = key(item);
    if (absl::Status s = CheckHashable(k); !s.ok()) return s;
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& x) { return Equals(x, k); })) continue;
    if (absl::Status s = ctx.Charge(seen.size()); !s.ok()) return s;
    seen.push_back(std::move(k));
    out.push_back(item);
  }
  return Generator(std::move(out));
}

KILN_JINJA_FILTER(FilterGroupby) {
  ArgBinder a("filter 'groupby'", args, {"attribute", "default", "case_sensitive"});
  if (!a.ok()) return a.status();
  if (absl::Status s = a.Require(1); !s.ok()) return s;
  const Value fallback = a.get(1, Value::None());
  const bool case_sensitive = a.has(2) && Truthy(a[2]);
  const AttrGetter key = MakeAttrGetter(a[0], &fallback, !case_sensitive);
  const AttrGetter output_key = MakeAttrGetter(a[0], &fallback, false);
  absl::StatusOr<std::vector<Value>> items = Items(ctx, input);
  if (!items.ok()) return items.status();
  if (absl::Status s = SortValues(&*items, key, false); !s.ok()) return s;
  std::vector<Value> groups;
  size_t i = 0;
  while (i < items->size()) {
    const Value k = key((*items)[i]);
    size_t j = i + 1;
    while (j < items->size() && Equals(key((*items)[j]), k)) ++j;
    std::vector<Value> members(items->begin() + static_cast<ptrdiff_t>(i),
                               items->begin() + static_cast<ptrdiff_t>(j));
    Value grouper = case_sensitive ? k : output_key(members[0]);
    groups.push_back(Value::GroupTuple(std::move(grouper), Value::List(std::move(members))));
    i = j;
  }
  return Value::List(std::move(groups));
}

}  // namespace kiln::models::jinja
