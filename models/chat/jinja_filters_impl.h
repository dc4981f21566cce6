// The filter functions, shared between the files that define them and the
// table in jinja_filters.cc. Internal to the engine.
#ifndef KILN_MODELS_CHAT_JINJA_FILTERS_IMPL_H_
#define KILN_MODELS_CHAT_JINJA_FILTERS_IMPL_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "models/chat/jinja_context.h"
#include "models/chat/jinja_value.h"

namespace kiln::models::jinja {

#define KILN_JINJA_FILTER(name) \
  absl::StatusOr<Value> name([[maybe_unused]] CallContext& ctx, const Value& input, CallArgs& args)

// jinja2's make_attrgetter: "a.b.0" looks up a, then b, then item 0, each
// with the sandbox's getitem; `default` replaces Undefined results; with
// `lower`, str results are lowercased (the case-insensitive sorts).
using AttrGetter = std::function<Value(const Value&)>;
AttrGetter MakeAttrGetter(const Value& attribute, const Value* default_value, bool lower);
// The lowercase of a str (other values as they are): ignore_case.
Value IgnoreCase(const Value& v);
// Python's sorted(..., key=...): stable; TypeError when keys do not compare.
absl::Status SortValues(std::vector<Value>* items, const std::function<Value(const Value&)>& key,
                        bool reverse);

// jinja_filters_seq.cc
KILN_JINJA_FILTER(FilterBatch);
KILN_JINJA_FILTER(FilterDictsort);
KILN_JINJA_FILTER(FilterFirst);
KILN_JINJA_FILTER(FilterItems);
KILN_JINJA_FILTER(FilterJoin);
KILN_JINJA_FILTER(FilterLast);
KILN_JINJA_FILTER(FilterList);
KILN_JINJA_FILTER(FilterMap);
KILN_JINJA_FILTER(FilterMax);
KILN_JINJA_FILTER(FilterMin);
KILN_JINJA_FILTER(FilterReject);
KILN_JINJA_FILTER(FilterRejectattr);
KILN_JINJA_FILTER(FilterReverse);
KILN_JINJA_FILTER(FilterSelect);
KILN_JINJA_FILTER(FilterSelectattr);
KILN_JINJA_FILTER(FilterSlice);
KILN_JINJA_FILTER(FilterSort);
KILN_JINJA_FILTER(FilterSum);
KILN_JINJA_FILTER(FilterUnique);
KILN_JINJA_FILTER(FilterGroupby);

}  // namespace kiln::models::jinja

#endif  // KILN_MODELS_CHAT_JINJA_FILTERS_IMPL_H_
