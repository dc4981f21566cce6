#!/usr/bin/env python3
"""Makes the references kiln's real-model tests compare against, with the real
libraries (transformers, tokenizers, sentencepiece, safetensors, torch) and
llama.cpp's gguf-py as the GGUF writer.

Run on a machine that has them (the project's GPU machine: transformers 5.17,
tokenizers 0.23, sentencepiece 0.2.2, safetensors 0.8, torch 2.11), with
gguf-py importable (PYTHONPATH pointing at a checkout of llama.cpp's gguf-py):

    python3 make_references.py --shared ../../../../shared --out OUT

It writes, under OUT (this folder's layout):
    tokenizers.json      ids and decodes of a varied text set, per tokenizer
    chat_templates.json  chat prompts rendered by apply_chat_template
    rope.json            inverse frequencies of RoPE scaling schemes
    models/<name>/       tiny random-weight checkpoints saved by transformers,
                         with their tokenizers and golden.json (logits, greedy)
    gguf/                dequantization references and tiny GGUF models with
                         goldens computed by transformers from the dequantized
                         weights
Everything is seeded: a rerun with the same library versions gives the same
files.
"""

import argparse
import json
import math
import os
import shutil

import numpy as np
import torch

import tokenizers
import sentencepiece as spm
import transformers
from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers, processors, trainers

GENERATOR = (f"tests/models/references/make_references.py with transformers {transformers.__version__}, "
             f"tokenizers {tokenizers.__version__}, sentencepiece {spm.__version__}, torch {torch.__version__}")

TEXTS = [
    "Hello world",
    "",
    " ",
    "   leading spaces",
    "trailing spaces   ",
    "tabs\tand\nnewlines\r\n\r\nend\n",
    "def square(x):\n    return x ** 2  # the square\n\n\nprint(square(12))\n",
    'int main() { printf("%d\\n", 42); return 0; }',
    "3.14159 and 1234567890123 and 1,000,000 and 0x1F",
    "日本語のテキストと中文文本，还有标点。",
    "한국어 텍스트 Привет мир Ωμέγα عربي",
    "emoji: 👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️ 🤖",
    "Café naïve résumé",
    "Cafe\u0301 nai\u0308ve re\u0301sume\u0301",
    "<|eot_id|> looks special",
    "<|im_start|>user\nhi there<|im_end|>\n<|im_start|>assistant\n",
    "mid <|begin_of_text|> text <|end_of_text|>",
    "<s> and </s> and <unk> [INST] x [/INST]",
    "I'm sure they're here, we've seen it; I'LL GO. You'd've known.",
    "\u00a0non-breaking and\u2003em space\u200b zero width",
    "mixed123abc456def 12345678",
    "   \n\n\n   \t\t  ",
    "a" * 300,
    "The quick brown fox jumps over the lazy dog. " * 3
    + "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of "
      "foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season of "
      "Light, it was the season of Darkness, it was the spring of hope, it was the winter of despair.",
]

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")

CORPUS = TEXTS + [
    "Once upon a time there was a little girl who lived in a village near the forest.",
    "Whenever she went out, the little girl wore a red riding cloak, so everyone in the village called her "
    "Little Red Riding Hood.",
    "Machine learning models read tokens, not characters; a tokenizer splits text into pieces.",
    "The cat sat on the mat. The dog sat on the log. The bird sat on the word.",
    "import torch\nfor i in range(10):\n    print(i, i * i)\n",
]


def write_json(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, ensure_ascii=False, indent=1)
        f.write("\n")


# ---------------------------------------------------------------- tokenizers

def train_byte_level_bpe(pattern, specials, bos, nfc, vocab_size):
    tok = tokenizers.Tokenizer(models.BPE(ignore_merges=pattern == LLAMA3_PATTERN))
    if nfc:
        tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS * 4, trainer)
    if bos is not None:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tok.token_to_id(bos))])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def train_sentencepiece(prefix):
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter([t for t in CORPUS * 4 if t.strip()]), model_prefix=prefix, vocab_size=420,
        model_type="bpe", byte_fallback=True, character_coverage=1.0, hard_vocab_limit=False,
        split_digits=True, allow_whitespace_only_pieces=True, remove_extra_whitespaces=False,
        normalization_rule_name="identity", num_threads=1, seed_sentencepiece_size=10000,
        minloglevel=2)
    return spm.SentencePieceProcessor(model_file=prefix + ".model")


def hf_entry(tok, path, auto=None):
    entry = {"path": path, "encode": [], "decode": []}
    for text in TEXTS:
        with_special = tok.encode(text, add_special_tokens=True).ids
        entry["encode"].append({"with_special": with_special,
                                "without_special": tok.encode(text, add_special_tokens=False).ids})
        entry["decode"].append({"text": tok.decode(with_special, skip_special_tokens=False),
                                "text_skip_special": tok.decode(with_special, skip_special_tokens=True)})
    if auto is not None:
        entry["transformers"] = [auto(text).input_ids for text in TEXTS]
    return entry


def sp_entry(sp, path):
    entry = {"path": path, "encode": [], "decode": []}
    for text in TEXTS:
        ids = sp.encode(text)
        with_special = [sp.bos_id()] + ids
        entry["encode"].append({"with_special": with_special, "without_special": ids})
        entry["decode"].append({"text": sp.decode(with_special), "text_skip_special": sp.decode(with_special)})
    entry["pieces"] = sp.get_piece_size()
    return entry


# ---------------------------------------------------------------- chat templates

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
                                                    "unit": {"type": "string", "enum": ["c", "f"]}},
                   "required": ["city"]}}}]

CONVERSATIONS = {
    "one_user": [{"role": "user", "content": "Hello!"}],
    "system_user": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "  Hi there  \n"}],
    "multi_turn": [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "What is 2+2?"},
                   {"role": "assistant", "content": "4."}, {"role": "user", "content": "And 3+3?"}],
    "unicode": [{"role": "user", "content": "日本語で答えて 👍🏽 \"quotes\" and \\ backslash"}],
}

QWEN_EXTRA_CONVERSATIONS = {
    "thinking_history": [
        {"role": "user", "content": "Why is the sky blue?"},
        {"role": "assistant", "content": "<think>\nRayleigh scattering.\n</think>\n\nBecause of scattering."},
        {"role": "user", "content": "And sunsets?"}],
    "reasoning_field": [
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "A1", "reasoning_content": "thought one"},
        {"role": "user", "content": "Q2"},
        {"role": "assistant", "content": "A2", "reasoning_content": "thought two"}],
    "tool_calls": [
        {"role": "system", "content": "You can call tools."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}}]},
        {"role": "tool", "content": "{\"temp\": 21}"},
        {"role": "tool", "content": "{\"sky\": \"clear\"}"},
        {"role": "user", "content": "Thanks"}],
}

INLINE_TEMPLATES = {
    "features": (
        "{%- macro render(m, idx=0) -%}\n"
        "[{{ idx }}:{{ m.role | upper }}] {{ m.content | trim }}\n"
        "{%- endmacro -%}\n"
        "{% set ns = namespace(count=0, roles=[]) %}\n"
        "{% for m in messages if m.role != 'system' %}\n"
        "{{ render(m, loop.index0) }}{% if not loop.last %} | {% endif %}\n"
        "{% set ns.count = ns.count + 1 %}\n"
        "{% endfor %}\n"
        "count={{ ns.count }} first={{ messages[0]['role'] }} last={{ (messages | last).role }}\n"
        "{{ messages | map(attribute='role') | join(',') }} {{ messages | selectattr('role', 'equalto', 'user') | list | length }}\n"
        "{{ {'b': 1, 'a': [1, 2.5, none, true, 'x']} | tojson }} {{ {'k': 'v'} | tojson(indent=2) }}\n"
        "{{ 'a,b,,c'.split(',') }} {{ '  pad  '.strip() }}|{{ 'xxhixx'.strip('x') }} {{ 'Hello'[1:4] }} {{ [1,2,3][::-1] }}\n"
        "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 7 / 2 }} {{ 1.0 }} {{ 10 / 5 }} {{ 'ab' * 3 }} {{ 1 ~ 2 }}\n"
        "{{ undefined_var | default('dflt') }} {{ '' | default('empty', true) }} {{ none is none }} {{ x is defined }}\n"
        "{%- if add_generation_prompt %}\n<assistant>{% endif %}\n"),
    "whitespace": (
        "  {% for m in messages %}\n"
        "    <{{ m.role }}>\n"
        "  {%- if m.content %} {{ m.content }} {% endif -%}\n"
        "  {%+ if true %}kept{% endif %}\n"
        "{# a comment #}\n"
        "{% endfor %}\n"
        "{% raw %}{{ not rendered }}{% endraw %}\n"
        "end\n"),
    "loops": (
        "{% for m in messages %}{{ loop.index }}/{{ loop.length }} {{ loop.revindex0 }} "
        "{{ loop.first }} {{ loop.last }} {{ loop.previtem.role if loop.previtem else '-' }} "
        "{{ loop.cycle('odd', 'even') }}\n{% endfor %}"
        "{% for i in range(5) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}\n"
        "{% for k, v in {'x': 1, 'y': 2}.items() %}{{ k }}={{ v }};{% endfor %}\n"
        "{% for x in [] %}never{% else %}empty-else{% endfor %}\n"
        "{{ [3, 1, 2] | sort }} {{ ['b', 'A', 'c'] | sort(reverse=true) }} {{ [1, 2, 2, 3] | unique | list }}"
        " {{ [1, 2, 3] | sum }} {{ [4, 9] | max }} {{ 'hello world' | title }} {{ 'abc' | capitalize }}\n"
        "{% set greeting %}Hi {{ messages[0].content }}{% endset %}{{ greeting | length }} {{ greeting }}\n"
        "{{ bos_token }}{{ eos_token }}"),
    "raise": "{% if messages | length > 1 %}{{ raise_exception('Only one message is supported') }}{% endif %}ok",
}


def chat_cases(shared):
    from transformers import AutoTokenizer
    cases = []
    for name in ["llama3", "qwen3"]:
        tok = AutoTokenizer.from_pretrained(os.path.join(shared, "fixtures/tokenizers", name))
        convs = dict(CONVERSATIONS)
        if name == "qwen3":
            convs.update(QWEN_EXTRA_CONVERSATIONS)
        for conv_name, messages in convs.items():
            for gen in [True, False]:
                variants = [({}, None)]
                if name == "qwen3":
                    variants += [({"enable_thinking": False}, None), ({}, TOOLS)]
                for extra, tools in variants:
                    out = tok.apply_chat_template(messages, tools=tools, tokenize=False,
                                                  add_generation_prompt=gen, **extra)
                    cases.append({"name": f"{name}/{conv_name}/gen={gen}/extra={json.dumps(extra)}/tools={tools is not None}",
                                  "template": name, "messages": messages, "tools": tools,
                                  "add_generation_prompt": gen, "extra": extra,
                                  "special_tokens": {"bos_token": tok.bos_token, "eos_token": tok.eos_token},
                                  "output": out})
    tok = AutoTokenizer.from_pretrained(os.path.join(shared, "fixtures/tokenizers", "llama3"))
    for tname, source in INLINE_TEMPLATES.items():
        for conv_name, messages in CONVERSATIONS.items():
            for gen in [True, False]:
                case = {"name": f"inline-{tname}/{conv_name}/gen={gen}", "template": "inline", "source": source,
                        "messages": messages, "tools": None, "add_generation_prompt": gen, "extra": {},
                        "special_tokens": {"bos_token": tok.bos_token, "eos_token": tok.eos_token}}
                try:
                    case["output"] = tok.apply_chat_template(messages, chat_template=source, tokenize=False,
                                                             add_generation_prompt=gen)
                except Exception as e:  # the template raised: kiln must fail with the same message
                    case["error"] = str(e)
                cases.append(case)
    return cases


# ---------------------------------------------------------------- rope

def rope_cases():
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    configs = [
        ("linear", {"rope_type": "linear", "factor": 4.0}, 4096),
        ("llama3", {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                    "original_max_position_embeddings": 8192}, 131072),
        ("llama3-8", {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 2.0, "high_freq_factor": 8.0,
                      "original_max_position_embeddings": 4096}, 16384),
        ("yarn", {"rope_type": "yarn", "factor": 4.0}, 32768),
        ("yarn-original", {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192}, 32768),
        ("yarn-beta", {"rope_type": "yarn", "factor": 8.0, "beta_fast": 16, "beta_slow": 2,
                       "attention_factor": 0.9}, 8192),
        ("yarn-mscale", {"rope_type": "yarn", "factor": 40.0, "mscale": 1.0, "mscale_all_dim": 0.5,
                         "original_max_position_embeddings": 4096}, 163840),
    ]
    out = []
    for name, params, max_pos in configs:
        for theta, head_dim in [(10000.0, 64), (500000.0, 128), (1000000.0, 16)]:
            rope = dict(params, rope_theta=theta)
            case = {"name": name, "rope_parameters": rope, "max_position_embeddings": max_pos,
                    "head_dim": head_dim}
            try:
                cfg = LlamaConfig(hidden_size=head_dim * 4, num_attention_heads=4, head_dim=head_dim,
                                  max_position_embeddings=max_pos, rope_parameters=rope)
                inv_freq, scale = ROPE_INIT_FUNCTIONS[params["rope_type"]](cfg, "cpu")
                case.update(inv_freq=[float(x) for x in inv_freq.double()], attention_scale=float(scale))
            except Exception as e:
                case["error"] = repr(e)
            out.append(case)
    return out


# ---------------------------------------------------------------- tiny models

def init_weights(model, seed):
    """Weights that give spread-out logits, so greedy choices are not near ties."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or "layernorm" in name:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
            elif name.endswith(".bias"):
                p.copy_(0.2 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            else:
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[-1]))


def greedy(model, ids, steps):
    ids = list(ids)
    out = []
    with torch.no_grad():
        for _ in range(steps):
            logits = model(torch.tensor([ids])).logits[0, -1]
            nxt = int(torch.argmax(logits.float()))
            out.append(nxt)
            ids.append(nxt)
    return out


def golden(model, prompt_ids, steps=12):
    with torch.no_grad():
        logits = model(torch.tensor([prompt_ids])).logits[0].float()
    return {"prompt_ids": list(prompt_ids), "logits": [[float(v) for v in row] for row in logits],
            "greedy": greedy(model, prompt_ids, steps), "dtype": str(next(model.parameters()).dtype)}


PROMPT = "Once upon a time, the quick brown fox"
CHAT = [{"role": "system", "content": "You are a storyteller."}, {"role": "user", "content": "Tell me a story."}]


def save_hf_tokenizer(tok, out_dir, template_source_config, specials):
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    with open(template_source_config, encoding="utf-8") as f:
        template = json.load(f)["chat_template"]
    config = {"chat_template": template, "tokenizer_class": "PreTrainedTokenizerFast", **specials}
    write_json(os.path.join(out_dir, "tokenizer_config.json"), config)


def make_model(kind, out_dir, shared, seed):
    from transformers import (AutoTokenizer, LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM,
                              Qwen2Config, Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM)
    os.makedirs(out_dir, exist_ok=True)
    fixtures = os.path.join(shared, "fixtures/tokenizers")
    sp = None
    tok = None
    if kind in ("llama3", "llama3-gguf"):
        specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
        tok = train_byte_level_bpe(LLAMA3_PATTERN, specials, "<|begin_of_text|>", False, 420)
        save_hf_tokenizer(tok, out_dir, os.path.join(fixtures, "llama3/tokenizer_config.json"),
                          {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"})
        vocab = tok.get_vocab_size()
    elif kind in ("qwen2", "qwen3"):
        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
        tok = train_byte_level_bpe(QWEN_PATTERN, specials, None, True, 400)
        save_hf_tokenizer(tok, out_dir, os.path.join(fixtures, "qwen3/tokenizer_config.json"),
                          {"bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"})
        vocab = tok.get_vocab_size()
    else:  # mistral: a SentencePiece tokenizer.model
        sp = train_sentencepiece(os.path.join(out_dir, "tokenizer"))
        os.remove(os.path.join(out_dir, "tokenizer.vocab"))
        write_json(os.path.join(out_dir, "tokenizer_config.json"), {
            "tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
            "chat_template": MISTRAL_TEMPLATE})
        vocab = sp.get_piece_size()
    common = dict(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5, max_position_embeddings=128)
    if kind == "llama3":
        cfg = LlamaConfig(**common, tie_word_embeddings=False, bos_token_id=0, eos_token_id=[1, 4],
                          rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                           "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                           "original_max_position_embeddings": 32})
        model = LlamaForCausalLM(cfg)
    elif kind == "llama3-gguf":  # K-quants need rows of 256
        cfg = LlamaConfig(**dict(common, hidden_size=256, intermediate_size=512), tie_word_embeddings=False,
                          rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                           "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                           "original_max_position_embeddings": 32})
        model = LlamaForCausalLM(cfg)
    elif kind == "qwen2":
        cfg = Qwen2Config(**common, tie_word_embeddings=True,
                          rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})
        model = Qwen2ForCausalLM(cfg)
    elif kind == "qwen3":
        cfg = Qwen3Config(**common, head_dim=32, tie_word_embeddings=False,
                          rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})
        model = Qwen3ForCausalLM(cfg)
    else:
        cfg = MistralConfig(**common, head_dim=24, sliding_window=None,
                            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                            bos_token_id=sp.bos_id(), eos_token_id=sp.eos_id())
        model = MistralForCausalLM(cfg)
    model.eval()
    init_weights(model, seed)
    model.config.architectures = [type(model).__name__]
    if kind == "qwen3":
        model = model.to(torch.bfloat16)
    shard = "60KB" if kind == "qwen2" else "1GB"
    if kind != "llama3-gguf":
        model.save_pretrained(out_dir, max_shard_size=shard)
    if sp is not None:
        prompt_ids = [sp.bos_id()] + sp.encode(PROMPT)
        chat_text = None
    else:
        auto = AutoTokenizer.from_pretrained(out_dir) if kind != "llama3-gguf" else None
        prompt_ids = tok.encode(PROMPT, add_special_tokens=True).ids
        chat_text = auto.apply_chat_template(CHAT, tokenize=False, add_generation_prompt=True) if auto else None
    g = golden(model, prompt_ids)
    g["prompt"] = PROMPT
    if chat_text is not None:
        g["chat_messages"] = CHAT
        g["chat_text"] = chat_text
        g["chat_ids"] = tok.encode(chat_text, add_special_tokens=False).ids
        g["chat_greedy"] = greedy(model, g["chat_ids"], 8)
    g["generator"] = GENERATOR
    return model, tok, sp, g


MISTRAL_TEMPLATE = ("{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
                    "{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
                    "{{ message['content'] + eos_token }}{% endif %}{% endfor %}")


# ---------------------------------------------------------------- gguf

def random_blocks(qtype, n_blocks, rng, gguf):
    """Valid random blocks: random bytes with the f16 scale fields set to small finite values."""
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint8)
    T = gguf.GGMLQuantizationType

    def f16(values):
        return np.asarray(values, dtype=np.float16).view(np.uint8).reshape(n_blocks, -1)
    d = rng.uniform(0.002, 0.02, size=(n_blocks, 1))
    if qtype in (T.Q8_0, T.Q4_0, T.Q5_0):
        raw[:, 0:2] = f16(d)
    elif qtype in (T.Q4_1, T.Q5_1):
        raw[:, 0:2] = f16(d)
        raw[:, 2:4] = f16(-d * 8)
    elif qtype == T.Q2_K:  # scales[16] qs[64] d dmin
        raw[:, 80:82] = f16(d)
        raw[:, 82:84] = f16(d / 2)
    elif qtype == T.Q3_K:  # hmask[32] qs[64] scales[12] d
        raw[:, 108:110] = f16(d)
    elif qtype in (T.Q4_K, T.Q5_K):  # d dmin scales[12] ...
        raw[:, 0:2] = f16(d / 4)
        raw[:, 2:4] = f16(d / 8)
    elif qtype == T.Q6_K:  # ql[128] qh[64] scales[16] d
        raw[:, 208:210] = f16(d / 8)
    return raw


def dequant_references(out_dir, gguf, rng):
    T = gguf.GGMLQuantizationType
    for qtype in [T.Q8_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K]:
        raw = random_blocks(qtype, 24, rng, gguf)
        values = gguf.quants.dequantize(raw, qtype).astype(np.float32)
        raw.tofile(os.path.join(out_dir, f"dequant_{qtype.name}.bin"))
        values.tofile(os.path.join(out_dir, f"dequant_{qtype.name}.f32"))
    # f16 and bf16 rows, NaN, inf and subnormals included
    bits = rng.integers(0, 1 << 16, size=4096, dtype=np.uint16)
    bits[:4] = [0x7C00, 0xFC00, 0x7E00, 0x0001]
    bits.tofile(os.path.join(out_dir, "dequant_F16.bin"))
    bits.view(np.float16).astype(np.float32).tofile(os.path.join(out_dir, "dequant_F16.f32"))
    bits.tofile(os.path.join(out_dir, "dequant_BF16.bin"))
    gguf.quants.dequantize(bits.view(np.uint8), T.BF16).astype(np.float32).tofile(
        os.path.join(out_dir, "dequant_BF16.f32"))


def rounding_references(out_dir, gguf):
    """float32 -> f16 (numpy's astype) and -> bf16 (gguf-py's quantize), round to nearest even."""
    rng = np.random.default_rng(99)
    x = (rng.standard_normal(4096) * np.exp2(rng.integers(-30, 20, 4096))).astype(np.float32)
    f16_ties = (np.arange(1, 257, dtype=np.float32) + 0.5) * np.float32(2.0 ** -10)  # halfway cases
    special = np.array([0.0, -0.0, 65504.0, 65520.0, 70000.0, 6e-8, 3e-8, 1e-40, np.inf, -np.inf, np.nan],
                       dtype=np.float32)
    x = np.concatenate([x, f16_ties, special]).astype(np.float32)
    x.tofile(os.path.join(out_dir, "round_input.f32"))
    with np.errstate(over="ignore"):
        x.astype(np.float16).view(np.uint16).tofile(os.path.join(out_dir, "round_F16.bin"))
    gguf.quants.quantize(x, gguf.GGMLQuantizationType.BF16).tofile(os.path.join(out_dir, "round_BF16.bin"))


def llama_permute(w, n_head):
    """llama.cpp's converter's row order for q/k (pairs adjacent instead of halves)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def llama_unpermute(w, n_head):
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def add_bpe_vocab(writer, tok, pre, bos, eos, template, gguf):
    vocab = tok.get_vocab()
    tokens = [None] * len(vocab)
    for t, i in vocab.items():
        tokens[i] = t
    specials = {a.content for a in tok.get_added_tokens_decoder().values() if a.special}
    types = [gguf.TokenType.CONTROL if t in specials else gguf.TokenType.NORMAL for t in tokens]
    merges = [" ".join(m) if isinstance(m, (list, tuple)) else m
              for m in json.loads(tok.to_str())["model"]["merges"]]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    if bos is not None:
        writer.add_bos_token_id(tok.token_to_id(bos))
        writer.add_add_bos_token(True)
    writer.add_eos_token_id(tok.token_to_id(eos))
    writer.add_chat_template(template)


def add_spm_vocab(writer, sp, gguf):
    tokens, scores, types = [], [], []
    for i in range(sp.get_piece_size()):
        tokens.append(sp.id_to_piece(i))
        scores.append(sp.get_score(i))
        if sp.is_unknown(i):
            types.append(gguf.TokenType.UNKNOWN)
        elif sp.is_control(i):
            types.append(gguf.TokenType.CONTROL)
        elif sp.is_byte(i):
            types.append(gguf.TokenType.BYTE)
        elif sp.is_unused(i):
            types.append(gguf.TokenType.UNUSED)
        else:
            types.append(gguf.TokenType.NORMAL)
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(sp.bos_id())
    writer.add_eos_token_id(sp.eos_id())
    writer.add_unk_token_id(sp.unk_id())
    writer.add_add_bos_token(True)
    writer.add_chat_template(MISTRAL_TEMPLATE)


def write_gguf_model(path, arch, model, qtypes, vocab_fn, rng, gguf, rope_factors=None):
    """Writes `model` as llama.cpp's converter would, quantizing each tensor to its qtype, and returns the
    state dict the file dequantizes to (in transformers' layout), for the goldens."""
    T = gguf.GGMLQuantizationType
    cfg = model.config
    writer = gguf.GGUFWriter(path, arch)
    writer.add_name(f"kiln tiny {arch}")
    writer.add_context_length(cfg.max_position_embeddings)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_block_count(cfg.num_hidden_layers)
    writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_head_count(cfg.num_attention_heads)
    writer.add_head_count_kv(cfg.num_key_value_heads)
    writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    theta = cfg.rope_parameters["rope_theta"] if getattr(cfg, "rope_parameters", None) else cfg.rope_theta
    writer.add_rope_freq_base(theta)
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    writer.add_rope_dimension_count(head_dim)
    if head_dim != cfg.hidden_size // cfg.num_attention_heads:
        writer.add_key_length(head_dim)
        writer.add_value_length(head_dim)
    writer.add_vocab_size(cfg.vocab_size)
    vocab_fn(writer)
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    per_layer = {"input_layernorm.weight": "attn_norm.weight", "self_attn.q_proj.weight": "attn_q.weight",
                 "self_attn.k_proj.weight": "attn_k.weight", "self_attn.v_proj.weight": "attn_v.weight",
                 "self_attn.o_proj.weight": "attn_output.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
                 "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
                 "mlp.down_proj.weight": "ffn_down.weight", "self_attn.q_proj.bias": "attn_q.bias",
                 "self_attn.k_proj.bias": "attn_k.bias", "self_attn.v_proj.bias": "attn_v.bias",
                 "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight"}
    dequantized = {}
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight" and cfg.tie_word_embeddings:
            continue
        if name.startswith("model.layers."):
            parts = name.split(".")
            gname = f"blk.{parts[2]}." + per_layer[".".join(parts[3:])]
        else:
            gname = names[name]
        w = tensor.float().numpy()
        permute = arch == "llama" and (gname.endswith("attn_q.weight") or gname.endswith("attn_k.weight"))
        n_head = cfg.num_attention_heads if gname.endswith("attn_q.weight") else cfg.num_key_value_heads
        if permute:
            w = llama_permute(w, n_head)
        qtype = qtypes(gname, w)
        if qtype in (T.F32, T.F16, T.BF16, T.Q8_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1):
            data = gguf.quants.quantize(w.astype(np.float32), qtype)
        else:  # gguf-py cannot quantize K-quants: random valid blocks instead
            block, size = gguf.GGML_QUANT_SIZES[qtype]
            n_blocks = w.size // block
            data = random_blocks(qtype, n_blocks, rng, gguf).reshape(*w.shape[:-1], w.shape[-1] // block * size)
        if qtype in (T.F32, T.F16):
            back = data.astype(np.float32)
        else:
            back = gguf.quants.dequantize(data, qtype).astype(np.float32).reshape(w.shape)
        writer.add_tensor(gname, data, raw_dtype=qtype if qtype not in (T.F32, T.F16) else None)
        if permute:
            back = llama_unpermute(back, n_head)
        dequantized[name] = torch.from_numpy(np.ascontiguousarray(back))
    if rope_factors is not None:
        writer.add_tensor("rope_freqs.weight", np.asarray(rope_factors, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return dequantized


def llama3_rope_factors(cfg, head_dim):
    """The per-pair divisors llama.cpp's converter stores in rope_freqs.weight for llama3 scaling."""
    p = cfg.rope_parameters
    base, factor = p["rope_theta"], p["factor"]
    low, high, old = p["low_freq_factor"], p["high_freq_factor"], p["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    factors = []
    for i in range(0, head_dim, 2):
        freq = 1.0 / (base ** (i / head_dim))
        wavelen = 2 * math.pi / freq
        if wavelen < high_wavelen:
            factors.append(1.0)
        elif wavelen > low_wavelen:
            factors.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            factors.append(1 / ((1 - smooth) / factor + smooth))
    return factors


def gguf_goldens(out_dir, shared, gguf):
    T = gguf.GGMLQuantizationType
    rng = np.random.default_rng(1234)
    os.makedirs(out_dir, exist_ok=True)
    dequant_references(out_dir, gguf, rng)
    rounding_references(out_dir, gguf)
    goldens = {"generator": GENERATOR + " and llama.cpp's gguf-py", "models": {}}

    # A Llama 3 model with mixed quant types, llama3 RoPE factors, the BPE vocabulary and its template.
    model, tok, _, _ = make_model("llama3-gguf", "/tmp/kiln-llama3-gguf", shared, 5)
    quant_of = {"token_embd.weight": T.Q8_0, "output.weight": T.Q6_K, "attn_q.weight": T.Q4_K,
                "attn_k.weight": T.Q4_0, "attn_v.weight": T.Q6_K, "attn_output.weight": T.Q8_0,
                "ffn_gate.weight": T.Q4_K, "ffn_up.weight": T.Q5_0, "ffn_down.weight": T.Q5_K}

    def qtypes(gname, w):
        return quant_of.get(gname.split(".", 2)[-1] if gname.startswith("blk.") else gname, T.F32)
    with open(os.path.join(shared, "fixtures/tokenizers/llama3/tokenizer_config.json"), encoding="utf-8") as f:
        llama3_template = json.load(f)["chat_template"]
    path = os.path.join(out_dir, "tiny-llama3-q.gguf")
    state = write_gguf_model(path, "llama", model, qtypes,
                             lambda w: add_bpe_vocab(w, tok, "llama-bpe", "<|begin_of_text|>", "<|eot_id|>",
                                                     llama3_template, gguf),
                             rng, gguf, rope_factors=llama3_rope_factors(model.config, 64))
    model.load_state_dict(state, strict=False)
    ids = tok.encode(PROMPT, add_special_tokens=True).ids
    goldens["models"]["tiny-llama3-q.gguf"] = dict(golden(model, ids), prompt=PROMPT)

    # Qwen2 (biases, tied) in f16 and bf16, used as stored.
    model, tok, _, _ = make_model("qwen2", "/tmp/kiln-qwen2-gguf", shared, 6)
    for name, qtype in [("tiny-qwen2-f16.gguf", T.F16), ("tiny-qwen2-bf16.gguf", T.BF16)]:
        with open(os.path.join(shared, "fixtures/tokenizers/qwen3/tokenizer_config.json"), encoding="utf-8") as f:
            qwen_template = json.load(f)["chat_template"]
        state = write_gguf_model(os.path.join(out_dir, name), "qwen2", model,
                                 lambda g, w, q=qtype: q if w.ndim == 2 else T.F32,
                                 lambda w: add_bpe_vocab(w, tok, "qwen2", None, "<|im_end|>", qwen_template, gguf),
                                 rng, gguf)
        copy = type(model)(model.config)
        copy.load_state_dict(dict(state, **({"lm_head.weight": state["model.embed_tokens.weight"]})), strict=False)
        copy.eval()
        ids = tok.encode(PROMPT, add_special_tokens=True).ids
        goldens["models"][name] = dict(golden(copy, ids), prompt=PROMPT)

    # Mistral-like llama-arch model with a SentencePiece vocabulary and f32 weights.
    model, _, sp, _ = make_model("mistral", "/tmp/kiln-mistral-gguf", shared, 7)
    state = write_gguf_model(os.path.join(out_dir, "tiny-mistral-spm.gguf"), "llama", model,
                             lambda g, w: T.F32, lambda w: add_spm_vocab(w, sp, gguf), rng, gguf)
    ids = [sp.bos_id()] + sp.encode(PROMPT)
    goldens["models"]["tiny-mistral-spm.gguf"] = dict(golden(model, ids), prompt=PROMPT,
                                                      tokenizer_ids=[[sp.bos_id()] + sp.encode(t) for t in TEXTS])
    write_json(os.path.join(out_dir, "goldens.json"), goldens)


FAILED = []


def section(name, fn):
    """Runs one part; a failure is printed and remembered, and the other parts still run."""
    import traceback
    print(f"== {name}", flush=True)
    try:
        fn()
    except Exception:
        traceback.print_exc()
        FAILED.append(name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", required=True, help="the shared folder (fixtures/)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.manual_seed(0)
    out = args.out
    fixtures = os.path.join(args.shared, "fixtures/tokenizers")
    refs = {"generator": GENERATOR, "texts": TEXTS, "tokenizers": {}}

    def fixture_tokenizers():
        from transformers import AutoTokenizer
        for name in ["llama3", "qwen3"]:
            tok = tokenizers.Tokenizer.from_file(os.path.join(fixtures, name, "tokenizer.json"))
            auto = AutoTokenizer.from_pretrained(os.path.join(fixtures, name))
            refs["tokenizers"][name] = hf_entry(tok, f"fixtures/tokenizers/{name}/tokenizer.json", auto)
        sp = spm.SentencePieceProcessor(model_file=os.path.join(fixtures, "llama2/tokenizer.model"))
        refs["tokenizers"]["llama2"] = sp_entry(sp, "fixtures/tokenizers/llama2/tokenizer.model")

    def tiny_model(i, kind):
        mdir = os.path.join(out, "models", f"tiny-{kind}")
        shutil.rmtree(mdir, ignore_errors=True)
        model, tok, msp, g = make_model(kind, mdir, args.shared, 100 + i)
        write_json(os.path.join(mdir, "golden.json"), g)
        if msp is not None:
            refs["tokenizers"][f"tiny-{kind}"] = sp_entry(msp, f"models/tiny-{kind}/tokenizer.model")
        else:
            refs["tokenizers"][f"tiny-{kind}"] = hf_entry(tok, f"models/tiny-{kind}/tokenizer.json")

    section("fixture tokenizers", fixture_tokenizers)
    for i, kind in enumerate(["llama3", "qwen2", "qwen3", "mistral"]):
        section(f"tiny-{kind}", lambda i=i, kind=kind: tiny_model(i, kind))
    write_json(os.path.join(out, "tokenizers.json"), refs)
    section("chat templates", lambda: write_json(os.path.join(out, "chat_templates.json"),
                                                 {"generator": GENERATOR, "cases": chat_cases(args.shared)}))
    section("rope", lambda: write_json(os.path.join(out, "rope.json"), {"generator": GENERATOR, "cases": rope_cases()}))

    def gguf_part():
        import gguf
        gguf_goldens(os.path.join(out, "gguf"), args.shared, gguf)
    section("gguf", gguf_part)
    print("FAILED:", FAILED if FAILED else "none")
    raise SystemExit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
