// `kiln info MODEL`: what a checkpoint holds and whether kiln can run it,
// without running it (a GGUF file's tensors are listed, not dequantized).
#include <cstdio>
#include <map>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "examples/commands.h"
#include "examples/flags.h"
#include "models/gguf/dequantize.h"
#include "models/gguf/gguf_file.h"
#include "models/gguf/gguf_model.h"
#include "models/load_model.h"

namespace kiln::cli {
namespace {

void Line(const char* key, const std::string& value) {
  std::printf("%-14s %s\n", key, value.c_str());
}

std::string Bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return absl::StrFormat("%.2f %s", bytes, units[u]);
}

void PrintConfig(const models::LlamaConfig& c) {
  Line("architecture", c.architecture);
  Line("shape", absl::StrCat(c.n_layers, " layers, dim ", c.dim, ", ", c.n_heads, " heads (",
                             c.n_kv_heads, " KV) of ", c.head_dim(), ", MLP ", c.hidden_dim,
                             ", vocab ", c.vocab_size));
  Line("context", absl::StrCat(c.max_seq_len, " positions"));
  Line("rope", absl::StrCat("theta ", c.rope_theta, ", scaling ", c.rope_scaling.ToString()));
  std::string extras;
  if (c.qkv_bias) extras += "q/k/v biases, ";
  if (c.o_bias) extras += "output bias, ";
  if (c.qk_norm) extras += "QK-norm, ";
  extras += c.tied_embeddings ? "tied embeddings" : "untied embeddings";
  Line("features", extras);
  Line("norm eps", absl::StrCat(c.norm_eps));
}

void PrintTokenizer(const std::string& path, int vocab_size) {
  absl::StatusOr<models::LoadedTokenizer> t =
      models::LoadTokenizerFor(path, absl::GetFlag(FLAGS_tokenizer), vocab_size);
  if (!t.ok()) {
    Line("tokenizer", absl::StrCat("none usable: ", t.status().message()));
    return;
  }
  Line("tokenizer", t->tokenizer->Describe());
  std::string stops;
  for (int32_t id : t->stop_ids) {
    absl::StrAppend(&stops, stops.empty() ? "" : ", ", id, " ", t->tokenizer->TokenText(id));
  }
  Line("stop tokens", stops.empty() ? "none" : stops);
  if (t->chat_template) {
    Line("chat template", absl::StrCat(t->chat_template->source().size(), " characters (parsed)"));
  } else {
    Line("chat template", t->no_template_reason);
  }
}

// A GGUF file: its tensor types and sizes from the header alone.
int InfoGguf(const std::string& path) {
  absl::StatusOr<models::GgufFile> file = models::GgufFile::Open(path);
  if (!file.ok()) {
    Line("can run", absl::StrCat("no: ", file.status().message()));
    return 1;
  }
  Line("format", absl::StrCat("GGUF v", file->version(), ", ", file->metadata().size(),
                              " metadata keys, ", file->tensors().size(), " tensors"));
  std::map<std::string, std::pair<int, uint64_t>> types;
  uint64_t total = 0;
  std::string refused;
  for (const models::GgufTensorInfo& t : file->tensors()) {
    auto& [count, bytes] = types[models::GgmlTypeName(t.type)];
    ++count;
    bytes += t.bytes;
    total += t.bytes;
    if (!models::CanDequantize(t.type) && refused.empty()) {
      refused = absl::StrCat("tensor ", t.name, " is ", models::GgmlTypeName(t.type),
                             "; kiln reads ", models::DequantizableTypeNames());
    }
  }
  std::string summary;
  for (const auto& [name, v] : types) {
    absl::StrAppend(&summary, summary.empty() ? "" : ", ", name, " x", v.first, " (",
                    Bytes(v.second), ")");
  }
  Line("tensors", summary);
  Line("bytes", Bytes(static_cast<double>(total)));
  absl::StatusOr<models::LlamaConfig> config = models::ReadGgufConfig(*file);
  if (!config.ok()) {
    if (const models::GgufValue* arch = file->Find("general.architecture")) {
      Line("architecture", arch->ToString());
    }
    Line("can run", absl::StrCat("no: ", config.status().message()));
    return 1;
  }
  PrintConfig(*config);
  PrintTokenizer(path, config->vocab_size);
  Line("can run", refused.empty() ? "yes (weights dequantized to f32, or --dtype, at load)"
                                  : absl::StrCat("no: ", refused));
  return refused.empty() ? 0 : 1;
}

int InfoCheckpoint(const std::string& path, models::CheckpointFormat format) {
  Line("format", format == models::CheckpointFormat::kHuggingFace ? "Hugging Face safetensors"
                                                                   : "llama2.c checkpoint");
  absl::StatusOr<models::LoadedModel> loaded = models::LoadCheckpoint(path, {.max_context = 0});
  if (!loaded.ok()) {
    Line("can run", absl::StrCat("no: ", loaded.status().message()));
    return 1;
  }
  PrintConfig(loaded->config);
  double bytes = 0;
  const models::LlamaWeights& w = loaded->weights;
  std::vector<const Tensor*> all = {&w.embedding, &w.final_norm};
  if (!loaded->config.tied_embeddings) all.push_back(&w.classifier);
  for (const models::LlamaLayerWeights& l : w.layers) {
    for (const Tensor* t : {&l.attention_norm, &l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_norm, &l.w_gate,
                            &l.w_down, &l.w_up, &l.q_norm, &l.k_norm, &l.bq, &l.bk, &l.bv, &l.bo}) {
      all.push_back(t);
    }
  }
  for (const Tensor* t : all) {
    if (t->defined() && t->ok()) {
      bytes += static_cast<double>(t->shape().num_elements()) * DTypeSize(t->dtype());
    }
  }
  Line("dtype", std::string(DTypeName(loaded->config.dtype)));
  Line("bytes", Bytes(bytes));
  PrintTokenizer(path, loaded->config.vocab_size);
  absl::StatusOr<models::LlamaModel> model =
      models::LlamaModel::Create(loaded->config, loaded->weights);
  Line("can run", model.ok() ? "yes" : absl::StrCat("no: ", model.status().message()));
  return model.ok() ? 0 : 1;
}

}  // namespace

int RunInfo(const std::vector<std::string>& args) {
  std::string path = absl::GetFlag(FLAGS_model);
  if (!args.empty()) path = args[0];
  if (path.empty() || args.size() > 1) {
    std::fprintf(stderr, "usage: kiln info MODEL\n\n%s", models::kSupportedCheckpoints);
    return 2;
  }
  Line("path", path);
  absl::StatusOr<models::CheckpointFormat> format = models::DetectCheckpointFormat(path);
  if (!format.ok()) {
    Line("can run", absl::StrCat("no: ", format.status().message()));
    return 1;
  }
  if (*format == models::CheckpointFormat::kGguf) return InfoGguf(path);
  return InfoCheckpoint(path, *format);
}

}  // namespace kiln::cli
