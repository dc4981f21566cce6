#include "models/load_model.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "models/hf_loader.h"
#include "models/llama2c_loader.h"

namespace kiln::models {

const char kSupportedCheckpoints[] =
    "kiln reads two checkpoint formats:\n"
    "  - llama2.c checkpoints (a .bin file, e.g. stories15M.bin or stories260K.bin from\n"
    "    https://huggingface.co/karpathy/tinyllamas), with a llama2.c tokenizer.bin\n"
    "    (tok512.bin for stories260K) given by --tokenizer or found beside the model;\n"
    "  - Hugging Face Llama checkpoints: a directory with config.json and one or more\n"
    "    .safetensors files (f32, f16 or bf16), with a llama2.c-format tokenizer given\n"
    "    by --tokenizer.\n";

absl::StatusOr<LlamaModel> LoadModel(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file or directory"));
  }
  absl::StatusOr<LoadedModel> loaded =
      S_ISDIR(st.st_mode) ? LoadHuggingFace(path) : LoadLlama2c(path);
  if (!loaded.ok()) return loaded.status();
  absl::StatusOr<LlamaModel> model =
      LlamaModel::Create(std::move(loaded->config), std::move(loaded->weights));
  if (!model.ok()) {
    return absl::Status(model.status().code(), absl::StrCat(path, ": ", model.status().message()));
  }
  return model;
}

absl::StatusOr<Tokenizer> LoadTokenizerFor(const std::string& model_path,
                                           const std::string& tokenizer_path, int vocab_size) {
  if (!tokenizer_path.empty()) return Tokenizer::Load(tokenizer_path, vocab_size);
  struct stat st;
  std::string dir = model_path;
  if (::stat(model_path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    const size_t slash = model_path.find_last_of('/');
    dir = slash == std::string::npos ? "." : model_path.substr(0, slash);
  }
  const std::string beside = dir + "/tokenizer.bin";
  if (::stat(beside.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(
        "no tokenizer: pass --tokenizer PATH (a llama2.c tokenizer.bin; ", beside,
        " does not exist)"));
  }
  return Tokenizer::Load(beside, vocab_size);
}

}  // namespace kiln::models
