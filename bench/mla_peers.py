"""The MLA decode case of `kiln bench fused` (mla_decode) in PyTorch, for the
peers' side: what a user would run instead, timed the way
../shared/bench/peers.py times its cases (medians of CUDA-event timings,
eager and torch.compile, each replayed from a CUDA graph). Run on the GPU
machine with peers.py beside this file or in ../shared/bench:

    python3 bench/mla_peers.py [--out mla_peers.json]

mla_decode: one decode step of multi-head latent attention (DeepSeek-V2's
MLA without its decoupled RoPE keys), f16: 16 heads of dim 64, one query
each; the compressed KV cache C [4096 keys, 256 latent] shared by the heads;
per-head up-projections W_uk, W_uv [16, 256, 64]. Two forms:
  naive     K = C W_uk, V = C W_uv per head, then softmax(q K^T) V
            (K given transposed, as the other attention cases);
  absorbed  q_abs = q W_uk^T; o = softmax(q_abs C^T) C; out = o W_uv
            (the weight-absorbed form inference engines use), also
            through SDPA over the latent (head dim 256, C expanded to the heads).
kiln's side starts from the naive form and must find the fusion itself.
The JSON row has peers.py's keys, the absorbed form's with an absorbed_
prefix; compare.py takes the best *_graph_us of either form."""
import argparse, json, os, sys, time
import torch
import torch.nn.functional as F

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.join(here, "..", "..", "shared", "bench")]
from peers import bench, nbytes, softmax_attn  # noqa: E402

dev, h = "cuda", torch.float16
HEADS, LATENT, HEAD_DIM, KEYS = 16, 256, 64, 4096


def inputs():
    g = torch.Generator(device=dev).manual_seed(0)
    q = torch.randn(HEADS, 1, HEAD_DIM, dtype=h, device=dev, generator=g)
    c = torch.randn(KEYS, LATENT, dtype=h, device=dev, generator=g)
    # Keys of about 0.1, as peers.py's attention cases: softmax_attn's f16 exp sum overflows otherwise.
    w_uk = torch.randn(HEADS, LATENT, HEAD_DIM, dtype=h, device=dev, generator=g) * (0.1 / LATENT ** 0.5)
    w_uv = torch.randn(HEADS, LATENT, HEAD_DIM, dtype=h, device=dev, generator=g) * 0.05
    return q, c, w_uk, w_uv


def naive(q, c, w_uk, w_uv):
    kt = w_uk.transpose(1, 2) @ c.t()  # [heads, head_dim, keys]
    return softmax_attn(q, kt, c @ w_uv)


def absorbed(q, c, w_uk, w_uv):
    q_abs = q @ w_uk.transpose(1, 2)  # [heads, 1, latent]
    return softmax_attn(q_abs, c.t(), c) @ w_uv


def absorbed_sdpa(q, c, w_uk, w_uv):
    q_abs = q @ w_uk.transpose(1, 2)
    kv = c.unsqueeze(0).expand(HEADS, KEYS, LATENT)
    o = F.scaled_dot_product_attention(q_abs.unsqueeze(0), kv.unsqueeze(0), kv.unsqueeze(0), scale=1.0)
    return o.squeeze(0) @ w_uv


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="mla_peers.json")
    a = ap.parse_args()
    args = inputs()
    ref = naive(*[t.float() for t in args])
    for f in (naive, absorbed, absorbed_sdpa):  # the forms agree before they are timed
        err = (f(*args).float() - ref).abs().max().item() / ref.abs().max().item()
        assert err < 2e-2, (f.__name__, err)
    q, c, w_uk, w_uv = args
    row = {"floor_us": (nbytes(*args) + nbytes(q)) / 3.0e12 * 1e6}
    for prefix, fn in (("", naive), ("absorbed_", absorbed)):
        row[prefix + "eager_us"] = bench(lambda: fn(*args))
        row[prefix + "eager_graph_us"] = bench(lambda: fn(*args), graph=True)
        cf = torch.compile(fn, dynamic=False)
        t = time.time(); cf(*args); torch.cuda.synchronize(); row[prefix + "compile_s"] = time.time() - t
        row[prefix + "inductor_us"] = bench(lambda: cf(*args))
        row[prefix + "inductor_graph_us"] = bench(lambda: cf(*args), graph=True)
    row["absorbed_sdpa_graph_us"] = bench(lambda: absorbed_sdpa(*args), graph=True)
    print("mla_decode", " ".join(f"{k}={v:.2f}" for k, v in row.items()), flush=True)
    with open(a.out, "w") as f:
        json.dump({"mla_decode": row}, f, indent=1)


if __name__ == "__main__":
    main()
