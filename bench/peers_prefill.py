"""Prefill at batch 1 in PyTorch, for the peers' side of `kiln bench decode
--prefill N`: what a user would run instead of kiln to read a prompt. A
Llama-style model (bf16, random weights, RMSNorm, rotate-half RoPE, grouped
KV heads through scaled_dot_product_attention with a causal mask, SiLU-gated
MLP, logits of the last position only), timed two ways:
  eager    the forward pass run from Python
  compile  torch.compile (Inductor, default mode) of it
Shapes as kiln's: Llama-3.2-1B (1b), Llama-3.1-8B (8b), Qwen3-8B (qwen3-8b:
QK-norm, head dim 128, 36 layers). Run on the GPU machine:

    python3 bench/peers_prefill.py [--models 1b,8b] [--tokens 512] [--out prefill_peers.json]

Prints ms per prefill (median of CUDA-event timings) and tokens/s, and
writes JSON {model: {eager_ms, compile_ms, tokens, tflops_eager, ...}}."""
import argparse, json
import torch
import torch.nn.functional as F

DEV, BF = "cuda", torch.bfloat16
SHAPES = {
    "1b": dict(dim=2048, layers=16, heads=32, kv_heads=8, head_dim=64, hidden=8192, vocab=128256, theta=5e5),
    "8b": dict(dim=4096, layers=32, heads=32, kv_heads=8, head_dim=128, hidden=14336, vocab=128256, theta=5e5),
    "qwen3-8b": dict(dim=4096, layers=36, heads=32, kv_heads=8, head_dim=128, hidden=12288, vocab=151936,
                     theta=1e6, qk_norm=True),
}


def rms_norm(x, w, eps):
    f = x.float()
    return (f * torch.rsqrt(f.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


class Model:
    def __init__(self, s, tokens):
        g = torch.Generator(device=DEV).manual_seed(1)
        w = lambda *shape: (torch.randn(*shape, device=DEV, generator=g) * 0.02).to(BF)
        self.s = s
        d, h, kv, hd, f = s["dim"], s["heads"], s["kv_heads"], s["head_dim"], s["hidden"]
        self.embedding, self.classifier = w(s["vocab"], d), w(s["vocab"], d)
        self.layers = [dict(qkv=w((h + 2 * kv) * hd, d), o=w(d, h * hd), gate_up=w(2 * f, d), down=w(d, f),
                            n1=torch.ones(d, device=DEV, dtype=BF), n2=torch.ones(d, device=DEV, dtype=BF),
                            qn=torch.ones(hd, device=DEV, dtype=BF), kn=torch.ones(hd, device=DEV, dtype=BF))
                       for _ in range(s["layers"])]
        self.final = torch.ones(d, device=DEV, dtype=BF)
        inv = 1.0 / s["theta"] ** (torch.arange(0, hd, 2, device=DEV).float() / hd)
        angles = torch.outer(torch.arange(tokens, device=DEV).float(), inv)
        self.cos, self.sin = angles.cos().to(BF), angles.sin().to(BF)

    def rope(self, x):  # x [heads, T, hd]
        half = x.shape[-1] // 2
        a, b = x[..., :half], x[..., half:]
        return torch.cat([a * self.cos - b * self.sin, b * self.cos + a * self.sin], -1)

    def forward(self, ids):
        s = self.s
        h, kv, hd, f, t = s["heads"], s["kv_heads"], s["head_dim"], s["hidden"], ids.shape[0]
        x = self.embedding[ids]
        for L in self.layers:
            q, k, v = (rms_norm(x, L["n1"], 1e-5) @ L["qkv"].t()).split([h * hd, kv * hd, kv * hd], -1)
            q, k, v = (z.view(t, -1, hd).transpose(0, 1) for z in (q, k, v))
            if s.get("qk_norm"):
                q, k = rms_norm(q, L["qn"], 1e-6), rms_norm(k, L["kn"], 1e-6)
            o = F.scaled_dot_product_attention(self.rope(q)[None], self.rope(k)[None], v[None], is_causal=True,
                                               enable_gqa=True)
            x = x + o[0].transpose(0, 1).reshape(t, h * hd) @ L["o"].t()
            g, u = (rms_norm(x, L["n2"], 1e-5) @ L["gate_up"].t()).split([f, f], -1)
            x = x + (F.silu(g) * u) @ L["down"].t()
        return rms_norm(x[-1:], self.final, 1e-5) @ self.classifier.t()

    def flops(self, t):
        s = self.s
        d, h, kv, hd, f = s["dim"], s["heads"], s["kv_heads"], s["head_dim"], s["hidden"]
        per_token = s["layers"] * 2 * d * ((h + 2 * kv) * hd + h * hd + 3 * f)
        attention = s["layers"] * 2 * 2 * h * hd * t * t / 2  # causal: half the scores
        return per_token * t + attention + 2 * d * s["vocab"]


def time_ms(fn, ids, reps=10):
    for _ in range(3):
        fn(ids)
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(ids)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="1b,8b,qwen3-8b")
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--out", default="prefill_peers.json")
    args = ap.parse_args()
    out = {}
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    for name in args.models.split(","):
        model = Model(SHAPES[name], args.tokens)
        ids = torch.randint(0, SHAPES[name]["vocab"], (args.tokens,), device=DEV)
        with torch.inference_mode():
            eager = time_ms(model.forward, ids)
            compiled = torch.compile(model.forward)
            comp = time_ms(compiled, ids)
        flops = model.flops(args.tokens)
        row = dict(tokens=args.tokens, eager_ms=eager, compile_ms=comp, tflops_eager=flops / eager / 1e9,
                   tflops_compile=flops / comp / 1e9, gflop=flops / 1e9)
        out[name] = row
        print(f"{name}: prefill of {args.tokens} tokens: eager {eager:.3f} ms ({args.tokens / eager * 1e3:.0f} "
              f"tokens/s), torch.compile {comp:.3f} ms ({args.tokens / comp * 1e3:.0f} tokens/s); "
              f"{flops / 1e9:.0f} GFLOP")
        del model, compiled
        torch.cuda.empty_cache()
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
