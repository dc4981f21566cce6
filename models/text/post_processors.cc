#include "models/text/post_processors.h"

#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "models/text/normalizers.h"

namespace kiln::models {
namespace {

// The single-sequence template as a list of pieces: the text (empty ids) or
// a special token's ids.
struct TemplatePiece {
  bool is_sequence = false;
  std::vector<int32_t> ids;
};

class TemplateProcessor : public PostProcessor {
 public:
  explicit TemplateProcessor(std::vector<TemplatePiece> single) : single_(std::move(single)) {}
  void Process(std::vector<int32_t>* ids, bool add_special_tokens) const override {
    if (!add_special_tokens) return;
    std::vector<int32_t> out;
    for (const TemplatePiece& piece : single_) {
      if (piece.is_sequence) {
        out.insert(out.end(), ids->begin(), ids->end());
      } else {
        out.insert(out.end(), piece.ids.begin(), piece.ids.end());
      }
    }
    *ids = std::move(out);
  }

 private:
  std::vector<TemplatePiece> single_;
};

// BertProcessing and RobertaProcessing: [cls] text [sep].
class WrapProcessor : public PostProcessor {
 public:
  WrapProcessor(int32_t cls, int32_t sep) : cls_(cls), sep_(sep) {}
  void Process(std::vector<int32_t>* ids, bool add_special_tokens) const override {
    if (!add_special_tokens) return;
    ids->insert(ids->begin(), cls_);
    ids->push_back(sep_);
  }

 private:
  int32_t cls_, sep_;
};

class NoOpProcessor : public PostProcessor {
 public:
  void Process(std::vector<int32_t>*, bool) const override {}
};

class SequenceProcessor : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> parts) : parts_(std::move(parts)) {}
  void Process(std::vector<int32_t>* ids, bool add_special_tokens) const override {
    for (const auto& part : parts_) part->Process(ids, add_special_tokens);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

absl::StatusOr<int32_t> Id(const JsonNode& node, int32_t id_limit) {
  uint64_t id = 0;
  if (id_limit <= 0 || !JsonNode::IsUint(node.value(), static_cast<uint64_t>(id_limit) - 1, &id)) {
    return node.Invalid(
        absl::StrCat("is ", node.value().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                     ", not an id in [0, ", id_limit, ")"));
  }
  return static_cast<int32_t>(id);
}

// special_tokens: name -> ids.
absl::StatusOr<absl::flat_hash_map<std::string, std::vector<int32_t>>> ParseSpecialTokens(
    const JsonNode& node, int32_t id_limit) {
  absl::flat_hash_map<std::string, std::vector<int32_t>> specials;
  if (node.value().is_null()) return specials;
  if (absl::Status s = node.ExpectObject(); !s.ok()) return s;
  for (const auto& [name, value] : node.value().items()) {
    const JsonNode entry = node.Member(name, value);
    if (absl::Status s = entry.ExpectObject(); !s.ok()) return s;
    const JsonNode ids = entry.Field("ids");
    if (absl::Status s = ids.ExpectArray(); !s.ok()) return s;
    if (entry.Has("tokens")) {
      const JsonNode tokens = entry.Field("tokens");
      if (absl::Status s = tokens.ExpectArray(); !s.ok()) return s;
      if (tokens.value().size() != ids.value().size()) {
        return entry.Invalid("has ids and tokens of different lengths");
      }
    }
    std::vector<int32_t>& list = specials[name];
    for (size_t i = 0; i < ids.value().size(); ++i) {
      absl::StatusOr<int32_t> id = Id(ids.Element(i), id_limit);
      if (!id.ok()) return id.status();
      list.push_back(*id);
    }
  }
  return specials;
}

// One piece of the template: {"Sequence": {"id": "A"}} / {"SpecialToken":
// {"id": "<s>"}}, or the string form "$A" / "<s>" (":type_id" allowed).
absl::StatusOr<TemplatePiece> ParsePiece(
    const JsonNode& node, const absl::flat_hash_map<std::string, std::vector<int32_t>>& specials) {
  std::string special;
  if (node.value().is_string()) {
    const std::string text = node.value().get<std::string>();
    const std::string name = text.substr(0, text.find(':'));
    if (absl::StartsWith(name, "$")) {
      if (name == "$" || name == "$A" || name == "$0") return TemplatePiece{true, {}};
      return node.Invalid(absl::StrCat("is \"", name, "\": a single-text template has only $A"));
    }
    special = name;
  } else if (node.value().is_object() && node.Has("Sequence")) {
    absl::StatusOr<std::string> id = node.Field("Sequence").String("id");
    if (!id.ok()) return id.status();
    if (*id != "A") {
      return node.Field("Sequence").Field("id").Invalid("is not \"A\" in a single-text template");
    }
    return TemplatePiece{true, {}};
  } else if (node.value().is_object() && node.Has("SpecialToken")) {
    absl::StatusOr<std::string> id = node.Field("SpecialToken").String("id");
    if (!id.ok()) return id.status();
    special = *std::move(id);
  } else {
    return node.Invalid("is neither a Sequence nor a SpecialToken piece");
  }
  const auto it = specials.find(special);
  if (it == specials.end()) {
    return node.Invalid(absl::StrCat("names \"", special, "\", missing from special_tokens"));
  }
  return TemplatePiece{false, it->second};
}

absl::StatusOr<std::unique_ptr<PostProcessor>> ParseTemplate(const JsonNode& node, int32_t id_limit) {
  absl::StatusOr<absl::flat_hash_map<std::string, std::vector<int32_t>>> specials =
      ParseSpecialTokens(node.Field("special_tokens"), id_limit);
  if (!specials.ok()) return specials.status();
  const JsonNode single = node.Field("single");
  std::vector<TemplatePiece> pieces;
  if (single.value().is_string()) {  // "<s> $A" as the Python API writes it
    const std::string text = single.value().get<std::string>();
    for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
      const nlohmann::json piece = std::string(word);
      absl::StatusOr<TemplatePiece> parsed =
          ParsePiece(JsonNode(piece, single.path(), &single.source()), *specials);
      if (!parsed.ok()) return parsed.status();
      pieces.push_back(*std::move(parsed));
    }
  } else {
    if (absl::Status s = single.ExpectArray(); !s.ok()) return s;
    for (size_t i = 0; i < single.value().size(); ++i) {
      absl::StatusOr<TemplatePiece> parsed = ParsePiece(single.Element(i), *specials);
      if (!parsed.ok()) return parsed.status();
      pieces.push_back(*std::move(parsed));
    }
  }
  return std::make_unique<TemplateProcessor>(std::move(pieces));
}

// BertProcessing's "cls"/"sep": ["[CLS]", 101].
absl::StatusOr<int32_t> ParsePair(const JsonNode& node, int32_t id_limit) {
  if (!node.value().is_array() || node.value().size() != 2 || !node.value()[0].is_string()) {
    return node.Invalid("is not [token, id]");
  }
  return Id(node.Element(1), id_limit);
}

}  // namespace

absl::StatusOr<std::unique_ptr<PostProcessor>> ParsePostProcessor(const JsonNode& node, int32_t id_limit,
                                                                  int depth) {
  if (node.value().is_null()) return nullptr;
  if (depth > kMaxComponentDepth) return node.Invalid(absl::StrCat("nests deeper than ", kMaxComponentDepth));
  absl::StatusOr<std::string> type = node.Type();
  if (!type.ok()) return type.status();
  if (*type == "TemplateProcessing") return ParseTemplate(node, id_limit);
  if (*type == "ByteLevel") return std::make_unique<NoOpProcessor>();  // it only moves offsets
  if (*type == "BertProcessing" || *type == "RobertaProcessing") {
    absl::StatusOr<int32_t> cls = ParsePair(node.Field("cls"), id_limit);
    if (!cls.ok()) return cls.status();
    absl::StatusOr<int32_t> sep = ParsePair(node.Field("sep"), id_limit);
    if (!sep.ok()) return sep.status();
    return std::make_unique<WrapProcessor>(*cls, *sep);
  }
  if (*type == "Sequence") {
    const JsonNode list = node.Field("processors");
    if (absl::Status s = list.ExpectArray(); !s.ok()) return s;
    std::vector<std::unique_ptr<PostProcessor>> parts;
    for (size_t i = 0; i < list.value().size(); ++i) {
      absl::StatusOr<std::unique_ptr<PostProcessor>> part =
          ParsePostProcessor(list.Element(i), id_limit, depth + 1);
      if (!part.ok()) return part.status();
      if (*part != nullptr) parts.push_back(*std::move(part));
    }
    return std::make_unique<SequenceProcessor>(std::move(parts));
  }
  return node.UnsupportedType(*type);
}

}  // namespace kiln::models
