#include "models/load_model.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "models/gguf/gguf_file.h"
#include "models/gguf/gguf_model.h"
#include "models/gguf/gguf_tokenizer.h"
#include "models/hf_loader.h"
#include "models/llama2c_loader.h"
#include "models/quantize_weights.h"
#include "models/text/hf_tokenizer.h"
#include "models/text/llama2c_tokenizer.h"
#include "models/text/sentencepiece_tokenizer.h"
#include "nlohmann/json.hpp"
#include "ops/ops.h"
#include "ops/quant.h"

namespace kiln::models {
namespace {

using nlohmann::json;

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string DirectoryOf(const std::string& path) {
  if (IsDirectory(path)) return path;
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// A JSON file beside the model, or null when there is none. Malformed JSON
// is an error: a config that cannot be read would silently change behaviour.
absl::StatusOr<json> ReadOptionalJson(const std::string& path) {
  if (!Exists(path)) return json(nullptr);
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  json value = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded() || !value.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  }
  return value;
}

// Every weight cast to `dtype` (realized), the tied classifier kept tied.
absl::Status CastWeights(LoadedModel& m, DType dtype) {
  if (!IsFloating(dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--dtype must be f32, f16 or bf16, got ", DTypeName(dtype)));
  }
  if (m.config.dtype == dtype) return absl::OkStatus();
  std::vector<Tensor> all;
  const auto convert = [&](Tensor& t) {
    if (!t.defined()) return;
    // Packed weights stay packed; their values decode to the new dtype.
    if (std::optional<PackedWeight> packed = AsPackedWeight(t)) {
      packed->dtype = dtype;
      t = Unpack(*packed);
      return;
    }
    t = contiguous(cast(t, dtype));
    all.push_back(t);
  };
  LlamaWeights& w = m.weights;
  convert(w.embedding);
  convert(w.final_norm);
  if (m.config.tied_embeddings) {
    w.classifier = w.embedding;
  } else {
    convert(w.classifier);
  }
  for (LlamaLayerWeights& l : w.layers) {
    for (Tensor* t : {&l.attention_norm, &l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_norm, &l.w_gate,
                      &l.w_down, &l.w_up, &l.q_norm, &l.k_norm, &l.bq, &l.bk, &l.bv, &l.bo}) {
      convert(*t);
    }
    for (LoraAdapter* a : {&l.lora_q, &l.lora_k, &l.lora_v, &l.lora_o, &l.lora_gate, &l.lora_up,
                           &l.lora_down}) {
      convert(a->a);
      convert(a->b);
    }
  }
  if (absl::Status s = RealizeAll(all); !s.ok()) return s;
  m.config.dtype = dtype;
  return absl::OkStatus();
}

// The dtype a GGUF file's matrices share when none is quantized; f32 else.
DType GgufNativeDType(const GgufFile& file) {
  std::optional<GgmlType> shared;
  for (const GgufTensorInfo& t : file.tensors()) {
    if (t.dims.size() < 2) continue;
    if (shared && *shared != t.type) return DType::kF32;
    shared = t.type;
  }
  if (shared == GgmlType::kF16) return DType::kF16;
  if (shared == GgmlType::kBF16) return DType::kBF16;
  return DType::kF32;
}

void AddStopId(std::vector<int32_t>& ids, int64_t id) {
  if (id >= 0 && id <= INT32_MAX && std::find(ids.begin(), ids.end(), id) == ids.end()) {
    ids.push_back(static_cast<int32_t>(id));
  }
}

// eos_token_id of config.json / generation_config.json: an int or a list.
void AddStopIds(std::vector<int32_t>& ids, const json& config) {
  if (!config.is_object()) return;
  const auto it = config.find("eos_token_id");
  if (it == config.end()) return;
  if (it->is_number_integer()) AddStopId(ids, it->get<int64_t>());
  if (it->is_array()) {
    for (const json& v : *it) {
      if (v.is_number_integer()) AddStopId(ids, v.get<int64_t>());
    }
  }
}

// A special token of tokenizer_config.json: a string or {"content": ...}.
std::optional<std::string> ConfigToken(const json& config, const char* key) {
  if (!config.is_object()) return std::nullopt;
  const auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  return std::nullopt;
}

// tokenizer_config.json's chat template, or chat_template.jinja beside it
// (how newer Hugging Face repositories ship it).
absl::Status ReadHfTemplate(const std::string& dir, const json& tokenizer_config,
                            LoadedTokenizer& out) {
  json config = tokenizer_config.is_object() ? tokenizer_config : json::object();
  const std::string jinja_path = dir + "/chat_template.jinja";
  if (!config.contains("chat_template") && Exists(jinja_path)) {
    std::ifstream in(jinja_path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    config["chat_template"] = text.str();
  }
  if (!config.contains("chat_template")) {
    out.no_template_reason =
        absl::StrCat("no chat template: ", dir, " has no tokenizer_config.json \"chat_template\" "
                     "and no chat_template.jinja");
    return absl::OkStatus();
  }
  absl::StatusOr<ChatTemplate> t =
      ChatTemplate::FromTokenizerConfig(config, dir + "/tokenizer_config.json");
  if (!t.ok()) return t.status();
  out.chat_template = std::make_shared<ChatTemplate>(*std::move(t));
  return absl::OkStatus();
}

absl::StatusOr<LoadedTokenizer> LoadGgufTokenizer(const std::string& path) {
  absl::StatusOr<GgufFile> file = GgufFile::Open(path);
  if (!file.ok()) return file.status();
  absl::StatusOr<GgufTokenizerMetadata> meta = ReadGgufTokenizer(*file);
  if (!meta.ok()) return meta.status();
  absl::StatusOr<std::unique_ptr<Tokenizer>> t = MakeGgufTokenizer(*meta, path);
  if (!t.ok()) return t.status();
  LoadedTokenizer out;
  out.tokenizer = *std::move(t);
  out.path = path;
  out.stop_ids = GgufStopIds(*meta);
  if (meta->chat_template.empty()) {
    out.no_template_reason = absl::StrCat("no chat template: ", path,
                                          " has no tokenizer.chat_template");
  } else {
    SpecialTokens special;
    if (meta->bos_id) special.bos_token = meta->tokens[*meta->bos_id];
    if (meta->eos_id) special.eos_token = meta->tokens[*meta->eos_id];
    if (meta->unk_id) special.unk_token = meta->tokens[*meta->unk_id];
    if (meta->pad_id) special.pad_token = meta->tokens[*meta->pad_id];
    absl::StatusOr<ChatTemplate> tmpl = ChatTemplate::Create(meta->chat_template, special);
    if (!tmpl.ok()) {
      return absl::Status(tmpl.status().code(), absl::StrCat(path, ": tokenizer.chat_template: ",
                                                             tmpl.status().message()));
    }
    out.chat_template = std::make_shared<ChatTemplate>(*std::move(tmpl));
  }
  return out;
}

// A tokenizer.json or tokenizer.model with the JSON configs of its directory
// (and of the model's, where the stop ids live).
absl::StatusOr<LoadedTokenizer> LoadHfTokenizer(const std::string& path,
                                                const std::string& model_dir) {
  LoadedTokenizer out;
  out.path = path;
  if (absl::EndsWith(path, ".json")) {
    absl::StatusOr<std::unique_ptr<HfTokenizer>> t = HfTokenizer::Load(path);
    if (!t.ok()) return t.status();
    out.tokenizer = *std::move(t);
  } else {
    absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> t = SentencePieceTokenizer::Load(path);
    if (!t.ok()) return t.status();
    if (const int32_t eos = (*t)->model().eos_id; eos >= 0) AddStopId(out.stop_ids, eos);
    out.tokenizer = *std::move(t);
  }
  const std::string dir = DirectoryOf(path);
  absl::StatusOr<json> tokenizer_config = ReadOptionalJson(dir + "/tokenizer_config.json");
  if (!tokenizer_config.ok()) return tokenizer_config.status();
  for (const std::string& d : {model_dir, dir}) {
    for (const char* name : {"/config.json", "/generation_config.json"}) {
      absl::StatusOr<json> config = ReadOptionalJson(d + name);
      if (!config.ok()) return config.status();
      AddStopIds(out.stop_ids, *config);
    }
  }
  if (std::optional<std::string> eos = ConfigToken(*tokenizer_config, "eos_token")) {
    AddStopId(out.stop_ids, out.tokenizer->TokenId(*eos));
  }
  if (absl::Status s = ReadHfTemplate(dir, *tokenizer_config, out); !s.ok()) return s;
  return out;
}

absl::StatusOr<LoadedTokenizer> LoadLlama2cTokenizer(const std::string& path, int vocab_size) {
  absl::StatusOr<Llama2cTokenizer> t = Llama2cTokenizer::Load(path, vocab_size);
  if (!t.ok()) return t.status();
  LoadedTokenizer out;
  out.tokenizer = std::make_shared<Llama2cTokenizer>(*std::move(t));
  out.path = path;
  // run.c stops at BOS or EOS.
  out.stop_ids = {Llama2cTokenizer::kBos, Llama2cTokenizer::kEos};
  out.no_template_reason = absl::StrCat("no chat template: ", path,
                                        " is a llama2.c tokenizer, which has none");
  return out;
}

bool StartsWithGgufMagic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && std::string(magic, 4) == "GGUF";
}

absl::StatusOr<LoadedTokenizer> LoadTokenizerFile(const std::string& path,
                                                  const std::string& model_dir, int vocab_size) {
  if (absl::EndsWith(path, ".json") || absl::EndsWith(path, ".model")) {
    return LoadHfTokenizer(path, model_dir);
  }
  if (StartsWithGgufMagic(path)) return LoadGgufTokenizer(path);
  return LoadLlama2cTokenizer(path, vocab_size);
}

}  // namespace

const char kSupportedCheckpoints[] =
    "kiln reads three checkpoint formats:\n"
    "  - Hugging Face directories (config.json + .safetensors, sharded or not; f32, f16,\n"
    "    bf16) of LlamaForCausalLM (Llama 2/3.x), MistralForCausalLM, Qwen2ForCausalLM and\n"
    "    Qwen3ForCausalLM, with tokenizer.json or tokenizer.model and the chat template of\n"
    "    tokenizer_config.json;\n"
    "  - GGUF files (llama.cpp; architectures llama, qwen2, qwen3; tensors F32, F16, BF16,\n"
    "    Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, dequantized at load) with the tokenizer\n"
    "    and chat template they carry;\n"
    "  - llama2.c checkpoints (a .bin file, e.g. stories15M.bin) with a llama2.c\n"
    "    tokenizer.bin given by --tokenizer or found beside the model.\n";

absl::StatusOr<CheckpointFormat> DetectCheckpointFormat(const std::string& path) {
  if (!Exists(path)) return absl::NotFoundError(absl::StrCat(path, ": no such file or directory"));
  if (IsDirectory(path)) return CheckpointFormat::kHuggingFace;
  if (StartsWithGgufMagic(path)) return CheckpointFormat::kGguf;
  return CheckpointFormat::kLlama2c;
}

absl::StatusOr<LoadedModel> LoadCheckpoint(const std::string& path, const LoadOptions& options) {
  if (options.max_context < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the context must not be negative, got ", options.max_context));
  }
  absl::StatusOr<CheckpointFormat> format = DetectCheckpointFormat(path);
  if (!format.ok()) return format.status();
  absl::StatusOr<LoadedModel> loaded;
  std::optional<DType> dtype = options.dtype;
  switch (*format) {
    case CheckpointFormat::kHuggingFace:
      loaded = LoadHuggingFace(path);
      break;
    case CheckpointFormat::kGguf: {
      absl::StatusOr<GgufFile> file = GgufFile::Open(path);
      if (!file.ok()) return file.status();
      GgufLoadOptions gguf;
      gguf.dtype = dtype.value_or(GgufNativeDType(*file));
      gguf.keep_packed = options.keep_packed;
      loaded = LoadGgufModel(*file, gguf);
      dtype.reset();  // already in it
      break;
    }
    case CheckpointFormat::kLlama2c:
      loaded = LoadLlama2c(path);
      break;
  }
  if (!loaded.ok()) return loaded.status();
  if (dtype) {
    if (absl::Status s = CastWeights(*loaded, *dtype); !s.ok()) return s;
  }
  if (options.quantize) {
    if (absl::Status s = QuantizeLinearWeights(loaded->weights, loaded->config.tied_embeddings, *options.quantize);
        !s.ok()) {
      return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
    }
  }
  if (options.max_context > 0) {
    loaded->config.max_seq_len = std::min(loaded->config.max_seq_len, options.max_context);
  }
  return loaded;
}

absl::StatusOr<LlamaModel> LoadModel(const std::string& path, const LoadOptions& options) {
  absl::StatusOr<LoadedModel> loaded = LoadCheckpoint(path, options);
  if (!loaded.ok()) return loaded.status();
  absl::StatusOr<LlamaModel> model =
      LlamaModel::Create(std::move(loaded->config), std::move(loaded->weights));
  if (!model.ok()) {
    return absl::Status(model.status().code(), absl::StrCat(path, ": ", model.status().message()));
  }
  return model;
}

absl::StatusOr<LoadedTokenizer> LoadTokenizerFor(const std::string& model_path,
                                                 const std::string& tokenizer_path,
                                                 int vocab_size) {
  const std::string model_dir = DirectoryOf(model_path);
  absl::StatusOr<LoadedTokenizer> loaded;
  if (!tokenizer_path.empty()) {
    if (!Exists(tokenizer_path)) {
      return absl::NotFoundError(absl::StrCat("--tokenizer ", tokenizer_path,
                                              ": no such file or directory"));
    }
    std::string file = tokenizer_path;
    if (IsDirectory(tokenizer_path)) {
      file.clear();
      for (const char* name : {"/tokenizer.json", "/tokenizer.model", "/tokenizer.bin"}) {
        if (file.empty() && Exists(tokenizer_path + name)) file = tokenizer_path + name;
      }
      if (file.empty()) {
        return absl::NotFoundError(absl::StrCat(
            "--tokenizer ", tokenizer_path,
            ": no tokenizer.json, tokenizer.model or tokenizer.bin in this directory"));
      }
    }
    loaded = LoadTokenizerFile(file, model_dir, vocab_size);
  } else if (IsDirectory(model_path)) {
    std::string file;
    for (const char* name : {"/tokenizer.json", "/tokenizer.model", "/tokenizer.bin"}) {
      if (file.empty() && Exists(model_path + name)) file = model_path + name;
    }
    if (file.empty()) {
      return absl::NotFoundError(absl::StrCat(
          "no tokenizer: ", model_path, " has no tokenizer.json, tokenizer.model or "
          "tokenizer.bin; pass --tokenizer PATH"));
    }
    loaded = LoadTokenizerFile(file, model_dir, vocab_size);
  } else if (StartsWithGgufMagic(model_path)) {
    loaded = LoadGgufTokenizer(model_path);
  } else {
    const std::string beside = model_dir + "/tokenizer.bin";
    if (!Exists(beside)) {
      return absl::NotFoundError(absl::StrCat("no tokenizer: pass --tokenizer PATH (", beside,
                                              " does not exist)"));
    }
    loaded = LoadLlama2cTokenizer(beside, vocab_size);
  }
  if (!loaded.ok()) return loaded.status();
  if (loaded->tokenizer->vocab_size() > vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        loaded->path, ": the tokenizer has ", loaded->tokenizer->vocab_size(),
        " tokens, more than the model's vocabulary of ", vocab_size, " (not this model's tokenizer?)"));
  }
  return loaded;
}

}  // namespace kiln::models
