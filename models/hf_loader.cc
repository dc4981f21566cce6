#include "models/hf_loader.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "models/mapped_file.h"
#include "models/safetensors.h"
#include "models/status_macros.h"
#include "nlohmann/json.hpp"

namespace kiln::models {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

absl::StatusOr<json> ReadJsonObject(const std::string& path) {
  absl::StatusOr<std::shared_ptr<const MappedFile>> file = MappedFile::Open(path);
  if (!file.ok()) return file.status();
  const absl::string_view text = (*file)->bytes();
  json value = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not well-formed JSON"));
  }
  if (!value.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected a JSON object, got ", value.type_name()));
  }
  return value;
}

// Reads config.json fields, treating a missing or null field as absent (HF
// writes null for defaults such as num_key_value_heads).
class ConfigReader {
 public:
  ConfigReader(const json& config, const std::string& path) : config_(config), path_(path) {}

  const json* Field(const char* key) const {
    const auto it = config_.find(key);
    return it == config_.end() || it->is_null() ? nullptr : &*it;
  }
  absl::Status Bad(const char* key, absl::string_view why) const {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": \"", key, "\" ", why));
  }
  const std::string& path() const { return path_; }
  absl::Status Unsupported(absl::string_view what) const {
    return absl::UnimplementedError(absl::StrCat(path_, ": ", what, " is not supported"));
  }

  absl::StatusOr<int> PositiveInt(const char* key, std::optional<int> fallback) const {
    const json* v = Field(key);
    if (v == nullptr) {
      if (fallback) return *fallback;
      return Bad(key, "is missing");
    }
    if (!v->is_number_integer())
      return Bad(key, absl::StrCat("is ", v->dump(), ", not an integer"));
    // Parsed JSON holds positive integers as unsigned, built JSON as signed.
    if (v->get<int64_t>() <= 0 || v->get<int64_t>() > INT_MAX) {
      return Bad(key, absl::StrCat("is ", v->dump(), ", not a positive int"));
    }
    return static_cast<int>(v->get<int64_t>());
  }
  absl::StatusOr<double> Number(const char* key, double fallback) const {
    const json* v = Field(key);
    if (v == nullptr) return fallback;
    if (!v->is_number()) return Bad(key, absl::StrCat("is ", v->dump(), ", not a number"));
    return v->get<double>();
  }
  absl::StatusOr<bool> Bool(const char* key, bool fallback) const {
    const json* v = Field(key);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) return Bad(key, absl::StrCat("is ", v->dump(), ", not true or false"));
    return v->get<bool>();
  }

 private:
  const json& config_;
  const std::string& path_;
};

// The architectures kiln runs, by config.json's "architectures" entry (or
// "model_type" when that is absent), and what each implies.
struct Architecture {
  const char* name;
  const char* model_type;
  bool qkv_bias;       // Qwen2's q/k/v projections always carry biases
  bool qk_norm;        // Qwen3 normalizes each query and key head
  bool reads_attention_bias;  // "attention_bias" adds biases to q, k, v and o
  bool sliding_window;        // "sliding_window" applies unless use_sliding_window is false
};
constexpr Architecture kArchitectures[] = {
    {"LlamaForCausalLM", "llama", false, false, true, false},
    {"MistralForCausalLM", "mistral", false, false, false, true},
    {"Qwen2ForCausalLM", "qwen2", true, false, false, false},
    {"Qwen3ForCausalLM", "qwen3", false, true, true, false},
};

absl::StatusOr<const Architecture*> FindArchitecture(const ConfigReader& r) {
  std::string wanted;
  if (const json* list = r.Field("architectures")) {
    if (!list->is_array() || list->empty() || !(*list)[0].is_string()) {
      return r.Bad("architectures", "is not a list of names");
    }
    if (list->size() > 1) return r.Bad("architectures", "names more than one architecture");
    wanted = (*list)[0].get<std::string>();
    for (const Architecture& a : kArchitectures) {
      if (wanted == a.name) return &a;
    }
  } else if (const json* type = r.Field("model_type")) {
    if (!type->is_string()) return r.Bad("model_type", "is not a string");
    wanted = type->get<std::string>();
    for (const Architecture& a : kArchitectures) {
      if (wanted == a.model_type) return &a;
    }
  } else {
    // Older Llama exports carry neither; their fields are Llama's.
    return &kArchitectures[0];
  }
  std::vector<std::string> names;
  for (const Architecture& a : kArchitectures) names.push_back(a.name);
  return r.Unsupported(absl::StrCat("architecture \"", wanted, "\" (kiln runs ",
                                    absl::StrJoin(names, ", "), ")"));
}

// "rope_scaling" (transformers 4) or "rope_parameters" (transformers 5, which
// also holds rope_theta). Types that change with the sequence length
// (dynamic NTK, longrope) are refused rather than approximated.
absl::Status ParseRopeScaling(const ConfigReader& r, const char* key, const json& rope,
                              LlamaConfig& c) {
  if (!rope.is_object()) return r.Bad(key, "is not an object");
  const ConfigReader in(rope, r.path());
  std::string type = "default";
  for (const char* type_key : {"rope_type", "type"}) {
    if (const json* t = in.Field(type_key)) {
      if (!t->is_string()) return r.Bad(key, absl::StrCat("has a ", type_key, " that is not a string"));
      type = t->get<std::string>();
      break;
    }
  }
  KILN_ASSIGN(c.rope_theta, in.Number("rope_theta", c.rope_theta));
  RopeScaling& s = c.rope_scaling;
  if (type == "default") {
    s.type = RopeScaling::Type::kDefault;
    return absl::OkStatus();
  }
  KILN_ASSIGN(s.factor, in.Number("factor", 1.0));
  if (type == "linear") {
    s.type = RopeScaling::Type::kLinear;
  } else if (type == "llama3") {
    s.type = RopeScaling::Type::kLlama3;
    KILN_ASSIGN(s.low_freq_factor, in.Number("low_freq_factor", 1.0));
    KILN_ASSIGN(s.high_freq_factor, in.Number("high_freq_factor", 4.0));
    KILN_ASSIGN(s.original_max_position_embeddings,
                in.PositiveInt("original_max_position_embeddings", std::nullopt));
  } else if (type == "yarn") {
    s.type = RopeScaling::Type::kYarn;
    KILN_ASSIGN(s.beta_fast, in.Number("beta_fast", 32.0));
    KILN_ASSIGN(s.beta_slow, in.Number("beta_slow", 1.0));
    KILN_ASSIGN(s.truncate, in.Bool("truncate", true));
    if (in.Field("attention_factor") != nullptr) {
      double f = 0;
      KILN_ASSIGN(f, in.Number("attention_factor", 1.0));
      s.attention_factor = f;
    }
    double mscale = 0, mscale_all_dim = 0;
    KILN_ASSIGN(mscale, in.Number("mscale", 0.0));
    KILN_ASSIGN(mscale_all_dim, in.Number("mscale_all_dim", 0.0));
    // The pre-scaling context sets the ramp; transformers 5 takes the model's
    // context when it is not given.
    KILN_ASSIGN(s.original_max_position_embeddings,
                in.PositiveInt("original_max_position_embeddings", c.max_seq_len));
    const auto yarn_mscale = [&](double m) {
      return s.factor <= 1 ? 1.0 : 0.1 * m * std::log(s.factor) + 1.0;
    };
    if (!s.attention_factor && mscale != 0 && mscale_all_dim != 0) {
      s.attention_factor = yarn_mscale(mscale) / yarn_mscale(mscale_all_dim);
    }
  } else {
    return r.Unsupported(absl::StrCat("RoPE scaling of type \"", type, "\" (in \"", key,
                                      "\"; kiln reads default, linear, llama3 and yarn)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LlamaConfig> ParseHfConfig(const json& config, const std::string& path) {
  const ConfigReader r(config, path);
  LlamaConfig c;
  const Architecture* arch = nullptr;
  KILN_ASSIGN(arch, FindArchitecture(r));
  c.architecture = arch->name;
  KILN_ASSIGN(c.dim, r.PositiveInt("hidden_size", std::nullopt));
  KILN_ASSIGN(c.hidden_dim, r.PositiveInt("intermediate_size", std::nullopt));
  KILN_ASSIGN(c.n_layers, r.PositiveInt("num_hidden_layers", std::nullopt));
  KILN_ASSIGN(c.n_heads, r.PositiveInt("num_attention_heads", std::nullopt));
  KILN_ASSIGN(c.n_kv_heads, r.PositiveInt("num_key_value_heads", c.n_heads));
  KILN_ASSIGN(c.vocab_size, r.PositiveInt("vocab_size", std::nullopt));
  KILN_ASSIGN(c.max_seq_len, r.PositiveInt("max_position_embeddings", 2048));  // HF's default
  KILN_ASSIGN(c.norm_eps, r.Number("rms_norm_eps", 1e-6));                     // HF's default
  KILN_ASSIGN(c.tied_embeddings, r.Bool("tie_word_embeddings", false));
  KILN_ASSIGN(c.rope_theta, r.Number("rope_theta", 10000.0));
  if (const json* rope = r.Field("rope_parameters")) {
    if (absl::Status s = ParseRopeScaling(r, "rope_parameters", *rope, c); !s.ok()) return s;
  } else if (const json* scaling = r.Field("rope_scaling")) {
    if (absl::Status s = ParseRopeScaling(r, "rope_scaling", *scaling, c); !s.ok()) return s;
  }
  c.rope_style = RopeStyle::kRotateHalf;
  c.qkv_bias = arch->qkv_bias;
  c.qk_norm = arch->qk_norm;
  bool attention_bias = false;
  KILN_ASSIGN(attention_bias, r.Bool("attention_bias", false));
  if (attention_bias) {
    if (!arch->reads_attention_bias) {
      return r.Unsupported(absl::StrCat("\"attention_bias\": true for ", arch->name));
    }
    c.qkv_bias = c.o_bias = true;
  }
  bool mlp_bias = false;
  KILN_ASSIGN(mlp_bias, r.Bool("mlp_bias", false));
  if (mlp_bias) return r.Unsupported("\"mlp_bias\": true");
  if (const json* act = r.Field("hidden_act"); act != nullptr && *act != "silu") {
    return r.Unsupported(absl::StrCat("\"hidden_act\": ", act->dump(), " (kiln's MLP is SiLU)"));
  }
  if (r.Field("head_dim") != nullptr) {
    KILN_ASSIGN(c.explicit_head_dim, r.PositiveInt("head_dim", std::nullopt));
    if (c.n_heads > 0 && c.dim % c.n_heads == 0 && c.explicit_head_dim == c.dim / c.n_heads) {
      c.explicit_head_dim = 0;  // the usual width, written out
    }
  }
  // A sliding window only changes attention past its width; kiln caps the
  // context there instead of masking.
  bool sliding = arch->sliding_window;
  if (r.Field("use_sliding_window") != nullptr) {
    KILN_ASSIGN(sliding, r.Bool("use_sliding_window", false));
  }
  if (sliding && r.Field("sliding_window") != nullptr) {
    int window = 0;
    KILN_ASSIGN(window, r.PositiveInt("sliding_window", std::nullopt));
    c.max_seq_len = std::min(c.max_seq_len, window);
  }
  // torch_dtype is not read: the weights' own dtype decides config.dtype.
  if (absl::Status s = c.Validate(path); !s.ok()) return s;
  return c;
}

namespace {

// The safetensors files of a checkpoint and which holds each tensor.
struct WeightFiles {
  std::vector<SafetensorsFile> files;
  std::map<std::string, size_t, std::less<>> where;
  std::string description;  // names the file(s) in "no such tensor" errors
};

absl::StatusOr<WeightFiles> OpenIndexed(const std::string& dir, const std::string& index_path) {
  absl::StatusOr<json> index = ReadJsonObject(index_path);
  if (!index.ok()) return index.status();
  const auto map = index->find("weight_map");
  if (map == index->end() || !map->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(index_path, ": no \"weight_map\" object"));
  }
  WeightFiles w;
  w.description = index_path;
  std::map<std::string, size_t> shard_of_file;
  for (const auto& [name, file] : map->items()) {
    // Shards are plain file names beside the index; anything else could
    // reach outside the checkpoint directory.
    if (!file.is_string() || file.get<std::string>().empty() ||
        absl::StrContains(file.get<std::string>(), "/") || file == "." || file == "..") {
      return absl::InvalidArgumentError(absl::StrCat(index_path, ": tensor '", name, "' maps to ",
                                                     file.dump(), ", not a file name"));
    }
    const std::string shard = file.get<std::string>();
    auto it = shard_of_file.find(shard);
    if (it == shard_of_file.end()) {
      absl::StatusOr<SafetensorsFile> opened = SafetensorsFile::Open(absl::StrCat(dir, "/", shard));
      if (!opened.ok()) {
        return absl::Status(opened.status().code(),
                            absl::StrCat(index_path, " names shard ", shard, ", which cannot be ",
                                         "read: ", opened.status().message()));
      }
      w.files.push_back(*std::move(opened));
      it = shard_of_file.emplace(shard, w.files.size() - 1).first;
    }
    w.where[name] = it->second;
  }
  return w;
}

absl::StatusOr<WeightFiles> OpenWeights(const std::string& dir) {
  std::error_code ec;
  const std::string single = absl::StrCat(dir, "/model.safetensors");
  const std::string index = absl::StrCat(dir, "/model.safetensors.index.json");
  std::vector<std::string> paths;
  if (fs::exists(single, ec)) {
    paths.push_back(single);
  } else if (fs::exists(index, ec)) {
    return OpenIndexed(dir, index);
  } else {
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().extension() == ".safetensors") paths.push_back(it->path().string());
    }
    std::sort(paths.begin(), paths.end());
  }
  if (paths.empty()) {
    return absl::NotFoundError(absl::StrCat(
        dir, ": no model.safetensors, model.safetensors.index.json or *.safetensors file",
        ec ? absl::StrCat(" (", ec.message(), ")") : ""));
  }
  WeightFiles w;
  w.description = paths.size() == 1 ? paths[0] : absl::StrCat(dir, "/*.safetensors");
  for (const std::string& path : paths) {
    absl::StatusOr<SafetensorsFile> opened = SafetensorsFile::Open(path);
    if (!opened.ok()) return opened.status();
    w.files.push_back(*std::move(opened));
    for (const std::string& name : w.files.back().names()) {
      const auto [it, inserted] = w.where.emplace(name, w.files.size() - 1);
      if (!inserted) {
        return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "' is in both ",
                                                       w.files[it->second].path(), " and ", path));
      }
    }
  }
  return w;
}

// Hands out tensors, checking each against the shape the config implies and
// the dtype of the first one taken.
class WeightReader {
 public:
  WeightReader(const WeightFiles& files, const std::string& config_path, const LlamaConfig& c)
      : files_(files), config_path_(config_path), config_(c) {}

  absl::StatusOr<Tensor> Take(const std::string& name, std::vector<int64_t> shape) {
    const auto it = files_.where.find(name);
    const SafetensorsFile* file = it == files_.where.end() ? nullptr : &files_.files[it->second];
    if (file == nullptr || !file->contains(name)) {
      return absl::NotFoundError(
          absl::StrCat(file ? file->path() : files_.description, ": no tensor '", name, "'"));
    }
    absl::StatusOr<Tensor> t = file->Get(name);
    if (!t.ok()) return t.status();
    const std::string actual = absl::StrCat(DTypeName(t->dtype()), t->shape().ToString());
    if (!(t->shape() == Shape::FromExtents(shape))) {
      return absl::InvalidArgumentError(
          absl::StrCat(file->path(), ": tensor '", name, "' is ", actual, ", but ", config_path_,
                       " (", config_.ToString(), ") implies [", absl::StrJoin(shape, ","), "]"));
    }
    if (!dtype_) {
      if (!IsFloating(t->dtype())) {
        return absl::InvalidArgumentError(absl::StrCat(file->path(), ": tensor '", name, "' is ",
                                                       actual,
                                                       "; weights must be f32, f16 or bf16"));
      }
      dtype_ = t->dtype();
      first_ = name;
    } else if (t->dtype() != *dtype_) {
      return absl::InvalidArgumentError(
          absl::StrCat(file->path(), ": tensor '", name, "' is ", actual, ", but '", first_,
                       "' is ", DTypeName(*dtype_), "; all weights must share one dtype"));
    }
    return *std::move(t);
  }

  DType dtype() const { return dtype_.value_or(DType::kF32); }

 private:
  const WeightFiles& files_;
  const std::string& config_path_;
  const LlamaConfig& config_;
  std::optional<DType> dtype_;
  std::string first_;
};

// Tensors the loader would otherwise skip silently: biases (kiln's Llama has
// none) and layers beyond num_hidden_layers (a config that disagrees).
absl::Status CheckUnexpected(const WeightFiles& w, const LlamaConfig& c,
                             const std::string& config_path) {
  for (const auto& [name, index] : w.where) {
    const std::string& path = w.files[index].path();
    const bool expected_bias =
        (c.qkv_bias && (absl::EndsWith(name, ".self_attn.q_proj.bias") ||
                        absl::EndsWith(name, ".self_attn.k_proj.bias") ||
                        absl::EndsWith(name, ".self_attn.v_proj.bias"))) ||
        (c.o_bias && absl::EndsWith(name, ".self_attn.o_proj.bias"));
    if (absl::EndsWith(name, ".bias") && !expected_bias) {
      return absl::UnimplementedError(absl::StrCat(
          path, ": tensor '", name, "' is a bias that ", c.architecture,
          " as configured does not have (kiln reads attention biases only where the config "
          "says so)"));
    }
    constexpr absl::string_view kPrefix = "model.layers.";
    if (!absl::StartsWith(name, kPrefix)) continue;
    const absl::string_view rest = absl::string_view(name).substr(kPrefix.size());
    int layer = 0;
    if (absl::SimpleAtoi(rest.substr(0, rest.find('.')), &layer) && layer >= c.n_layers) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": tensor '", name, "' is beyond the ",
                                                     c.n_layers, " layers ", config_path,
                                                     " declares (num_hidden_layers)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LoadedModel> LoadHuggingFace(const std::string& dir) {
  const std::string config_path = absl::StrCat(dir, "/config.json");
  absl::StatusOr<json> config_json = ReadJsonObject(config_path);
  if (!config_json.ok()) return config_json.status();
  LoadedModel model;
  KILN_ASSIGN(model.config, ParseHfConfig(*config_json, config_path));
  LlamaConfig& c = model.config;

  absl::StatusOr<WeightFiles> files = OpenWeights(dir);
  if (!files.ok()) return files.status();
  if (absl::Status s = CheckUnexpected(*files, c, config_path); !s.ok()) return s;
  c.qk_norm = c.qk_norm || files->where.count("model.layers.0.self_attn.q_norm.weight") > 0;

  WeightReader r(*files, config_path, c);
  const int64_t dim = c.dim, hidden = c.hidden_dim, kv = c.kv_dim(), vocab = c.vocab_size;
  const int64_t head = c.head_dim(), qd = c.q_dim();
  LlamaWeights& w = model.weights;
  KILN_ASSIGN(w.embedding, r.Take("model.embed_tokens.weight", {vocab, dim}));
  w.layers.resize(c.n_layers);
  for (int i = 0; i < c.n_layers; ++i) {
    LlamaLayerWeights& l = w.layers[i];
    const std::string p = absl::StrCat("model.layers.", i, ".");
    KILN_ASSIGN(l.attention_norm, r.Take(p + "input_layernorm.weight", {dim}));
    KILN_ASSIGN(l.wq, r.Take(p + "self_attn.q_proj.weight", {qd, dim}));
    KILN_ASSIGN(l.wk, r.Take(p + "self_attn.k_proj.weight", {kv, dim}));
    KILN_ASSIGN(l.wv, r.Take(p + "self_attn.v_proj.weight", {kv, dim}));
    KILN_ASSIGN(l.wo, r.Take(p + "self_attn.o_proj.weight", {dim, qd}));
    if (c.qkv_bias) {
      KILN_ASSIGN(l.bq, r.Take(p + "self_attn.q_proj.bias", {qd}));
      KILN_ASSIGN(l.bk, r.Take(p + "self_attn.k_proj.bias", {kv}));
      KILN_ASSIGN(l.bv, r.Take(p + "self_attn.v_proj.bias", {kv}));
    }
    if (c.o_bias) KILN_ASSIGN(l.bo, r.Take(p + "self_attn.o_proj.bias", {dim}));
    KILN_ASSIGN(l.ffn_norm, r.Take(p + "post_attention_layernorm.weight", {dim}));
    KILN_ASSIGN(l.w_gate, r.Take(p + "mlp.gate_proj.weight", {hidden, dim}));
    KILN_ASSIGN(l.w_up, r.Take(p + "mlp.up_proj.weight", {hidden, dim}));
    KILN_ASSIGN(l.w_down, r.Take(p + "mlp.down_proj.weight", {dim, hidden}));
    if (c.qk_norm) {
      KILN_ASSIGN(l.q_norm, r.Take(p + "self_attn.q_norm.weight", {head}));
      KILN_ASSIGN(l.k_norm, r.Take(p + "self_attn.k_norm.weight", {head}));
    }
  }
  KILN_ASSIGN(w.final_norm, r.Take("model.norm.weight", {dim}));
  // A tied checkpoint may still carry a copy of lm_head; the embedding is
  // used either way, as transformers does.
  if (c.tied_embeddings) {
    w.classifier = w.embedding;
  } else {
    KILN_ASSIGN(w.classifier, r.Take("lm_head.weight", {vocab, dim}));
  }
  c.dtype = r.dtype();
  return model;
}

}  // namespace kiln::models
