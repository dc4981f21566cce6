#include "models/llama2c_loader.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "models/mapped_file.h"

namespace kiln::models {
namespace {

constexpr size_t kHeaderBytes = 7 * sizeof(int32_t);

// Hands out consecutive f32 blocks of the mapped file.
class Cursor {
 public:
  Cursor(std::shared_ptr<const MappedFile> file, size_t offset)
      : file_(std::move(file)), offset_(offset) {}

  Tensor Take(std::vector<int64_t> sizes) {
    const int64_t count = NumElements(sizes);
    const size_t bytes = static_cast<size_t>(count) * sizeof(float);
    Tensor t = Tensor::WrapHost(DType::kF32, sizes, file_->data() + offset_, bytes, file_,
                                /*writable=*/false);
    offset_ += bytes;
    return t;
  }
  void Skip(size_t floats) { offset_ += floats * sizeof(float); }
  size_t offset() const { return offset_; }

 private:
  std::shared_ptr<const MappedFile> file_;
  size_t offset_;
};

}  // namespace

absl::StatusOr<LoadedModel> LoadLlama2c(const std::string& path) {
  absl::StatusOr<std::shared_ptr<const MappedFile>> file = MappedFile::Open(path);
  if (!file.ok()) return file.status();
  const MappedFile& f = **file;
  if (f.size() < kHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": truncated llama2.c checkpoint: ", f.size(), " bytes, the header alone needs ",
        kHeaderBytes));
  }
  int32_t header[7];
  std::memcpy(header, f.data(), kHeaderBytes);
  LoadedModel model;
  LlamaConfig& c = model.config;
  c.architecture = "llama2.c";
  c.dim = header[0];
  c.hidden_dim = header[1];
  c.n_layers = header[2];
  c.n_heads = header[3];
  c.n_kv_heads = header[4];
  c.tied_embeddings = header[5] > 0;
  c.vocab_size = header[5] == INT32_MIN ? 0 : (header[5] < 0 ? -header[5] : header[5]);
  c.max_seq_len = header[6];
  c.rope_style = RopeStyle::kInterleaved;
  c.rope_theta = 10000.0;
  c.norm_eps = 1e-5;
  c.dtype = DType::kF32;
  if (absl::Status s = c.Validate(absl::StrCat(path, " (llama2.c header)")); !s.ok()) return s;

  const uint64_t dim = c.dim, hidden = c.hidden_dim, layers = c.n_layers, vocab = c.vocab_size;
  const uint64_t kv = c.kv_dim(), head = c.head_dim(), seq = c.max_seq_len;
  const uint64_t floats = vocab * dim +                        // embedding
                          layers * (2 * dim + 2 * dim * dim + 2 * dim * kv + 3 * dim * hidden) +
                          dim +                                // final norm
                          seq * head +                         // freq_cis real + imag (unused)
                          (c.tied_embeddings ? 0 : vocab * dim);
  const uint64_t expected = kHeaderBytes + floats * sizeof(float);
  if (f.size() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": the llama2.c header (", c.ToString(), ", ",
        c.tied_embeddings ? "shared" : "separate", " classifier) needs ", expected,
        " bytes, but the file has ", f.size(), f.size() < expected ? " (truncated)" : ""));
  }

  Cursor cursor(*file, kHeaderBytes);
  LlamaWeights& w = model.weights;
  w.layers.resize(c.n_layers);
  const int64_t d = c.dim, h = c.hidden_dim, k = c.kv_dim();
  w.embedding = cursor.Take({static_cast<int64_t>(vocab), d});
  for (auto& l : w.layers) l.attention_norm = cursor.Take({d});
  for (auto& l : w.layers) l.wq = cursor.Take({d, d});
  for (auto& l : w.layers) l.wk = cursor.Take({k, d});
  for (auto& l : w.layers) l.wv = cursor.Take({k, d});
  for (auto& l : w.layers) l.wo = cursor.Take({d, d});
  for (auto& l : w.layers) l.ffn_norm = cursor.Take({d});
  for (auto& l : w.layers) l.w_gate = cursor.Take({h, d});
  for (auto& l : w.layers) l.w_down = cursor.Take({d, h});
  for (auto& l : w.layers) l.w_up = cursor.Take({h, d});
  w.final_norm = cursor.Take({d});
  cursor.Skip(seq * head);  // precomputed RoPE tables; kiln computes its own
  w.classifier = c.tied_embeddings ? w.embedding : cursor.Take({static_cast<int64_t>(vocab), d});
  return model;
}

}  // namespace kiln::models
