# Writes the GGUF fuzz seeds (gguf/*.gguf) with llama.cpp's gguf-py, one small
# file per tensor type plus metadata of several kinds:
#   PYTHONPATH=<llama.cpp>/gguf-py python3 make_gguf_seeds.py
import os

import gguf
import numpy as np

T = gguf.GGMLQuantizationType
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gguf")
rng = np.random.default_rng(1)
for q in [T.F32, T.F16, T.BF16, T.Q8_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K,
          T.Q6_K, T.IQ4_NL, T.Q8_K]:
    w = gguf.GGUFWriter(os.path.join(HERE, f"{q.name}.gguf"), "llama")
    w.add_uint32("llama.block_count", 1)
    w.add_array("tokenizer.ggml.tokens", ["a", "b"])
    w.add_float32("x", 1.5)
    block, size = gguf.GGML_QUANT_SIZES[q]
    if q in (T.F32, T.F16):
        w.add_tensor("t", rng.standard_normal((2, 8)).astype(np.float32 if q == T.F32 else np.float16))
    else:
        w.add_tensor("t", rng.integers(0, 256, size=(1, size), dtype=np.uint8), raw_dtype=q)
    w.add_tensor("n", np.ones(3, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

# Metadata of every value type, and no tensors.
w = gguf.GGUFWriter(os.path.join(HERE, "metadata.gguf"), "qwen2")
w.add_uint8("u8", 7)
w.add_int8("i8", -7)
w.add_uint16("u16", 700)
w.add_int16("i16", -700)
w.add_uint32("u32", 70000)
w.add_int32("i32", -70000)
w.add_uint64("u64", 1 << 40)
w.add_int64("i64", -(1 << 40))
w.add_float32("f32", 0.5)
w.add_float64("f64", 0.25)
w.add_bool("b", True)
w.add_string("s", "text ✓")
w.add_array("ints", [1, 2, 3])
w.add_array("strings", ["x", "yz"])
w.add_array("floats", [0.5, 1.5])
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
