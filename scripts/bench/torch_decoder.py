#!/usr/bin/env python3
"""PyTorch baseline for bench_cuda: the same decoder architectures and shapes (gemma3 270M,
Llama ~1.5B) with random fp16 weights and a static KV cache, decode tokens/s at batch 1 in eager
mode and under torch.compile (mode="reduce-overhead", CUDA graphs). Prints a table, writes JSON.

  torch_decoder.py --json OUT.json [--steps 128] [--models gemma3-270m,llama-1.5b]
Exits 3 when torch or a CUDA device is missing (scripts/gpu-check.sh then skips it)."""
import argparse, json, math, sys, time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("torch_decoder: torch is not installed"); sys.exit(3)
if not torch.cuda.is_available():
    print("torch_decoder: torch has no CUDA device"); sys.exit(3)

SPECS = {  # name: (arch, d, layers, heads, kv_heads, head_dim, ffn, vocab)
    "gemma3-270m": ("gemma3", 640, 18, 4, 1, 256, 2048, 262144),
    "llama-1.5b": ("llama", 2048, 24, 16, 4, 128, 8192, 32000),
}


class Decoder(torch.nn.Module):
    def __init__(self, arch, d, layers, heads, kvh, hd, ffn, vocab, ctx):
        super().__init__()
        dev, dt = "cuda", torch.float16
        r = lambda *s: (torch.randn(*s, device=dev, dtype=dt) / math.sqrt(s[-1]))
        self.arch, self.h, self.kvh, self.hd = arch, heads, kvh, hd
        self.emb = torch.randn(vocab, d, device=dev, dtype=dt)
        self.out = self.emb if arch == "gemma3" else r(vocab, d)
        self.L = [dict(q=r(heads * hd, d), k=r(kvh * hd, d), v=r(kvh * hd, d), o=r(d, heads * hd),
                       g=r(ffn, d), u=r(ffn, d), dn=r(d, ffn)) for _ in range(layers)]
        self.kc = torch.zeros(layers, 1, kvh, ctx, hd, device=dev, dtype=dt)
        self.vc = torch.zeros_like(self.kc)
        inv = 1.0 / (1e6 ** (torch.arange(0, hd, 2, device=dev).float() / hd))
        ang = torch.arange(ctx, device=dev).float()[:, None] * inv[None]
        self.cos, self.sin = ang.cos().to(dt), ang.sin().to(dt)

    def rope(self, x, pos):  # NEOX halves for both (the cost is the same as NORM pairs)
        c, s = self.cos[pos], self.sin[pos]
        a, b = x[..., : self.hd // 2], x[..., self.hd // 2:]
        return torch.cat([a * c - b * s, a * s + b * c], -1)

    def forward(self, tok, pos):  # tok [1], pos: 0-dim tensor
        x = self.emb[tok]
        for i, L in enumerate(self.L):
            h = F.rms_norm(x, (x.shape[-1],))
            q = (h @ L["q"].T).view(1, self.h, 1, self.hd)
            k = (h @ L["k"].T).view(1, self.kvh, 1, self.hd)
            v = (h @ L["v"].T).view(1, self.kvh, 1, self.hd)
            q, k = self.rope(q, pos), self.rope(k, pos)
            self.kc[i].index_copy_(2, pos.view(1), k)
            self.vc[i].index_copy_(2, pos.view(1), v)
            mask = (torch.arange(self.kc.shape[3], device=x.device) <= pos)
            a = F.scaled_dot_product_attention(q, self.kc[i], self.vc[i], attn_mask=mask,
                                               enable_gqa=True)
            x = x + a.reshape(1, -1) @ L["o"].T
            h = F.rms_norm(x, (x.shape[-1],))
            act = F.gelu(h @ L["g"].T, approximate="tanh") if self.arch == "gemma3" else F.silu(h @ L["g"].T)
            x = x + (act * (h @ L["u"].T)) @ L["dn"].T
        return F.rms_norm(x, (x.shape[-1],)) @ self.out.T


def bench(step, steps):
    tok = torch.tensor([5], device="cuda")
    for i in range(3):  # warm-up (and compilation)
        step(tok, torch.tensor(i, device="cuda"))
    torch.cuda.synchronize()
    t = time.perf_counter()
    for i in range(steps):
        logits = step(tok, torch.tensor(16 + i, device="cuda"))
        tok = logits.argmax(-1)
    torch.cuda.synchronize()
    return steps / (time.perf_counter() - t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default="")
    ap.add_argument("--steps", type=int, default=128)
    ap.add_argument("--models", default="gemma3-270m,llama-1.5b")
    a = ap.parse_args()
    rows = []
    with torch.inference_mode():
        for name, spec in SPECS.items():
            if name not in a.models:
                continue
            m = Decoder(*spec, ctx=4096)
            eager = bench(m.forward, a.steps)
            try:
                comp = bench(torch.compile(m.forward, mode="reduce-overhead"), a.steps)
            except Exception as e:  # a compile failure is a result, not a crash
                print(f"torch.compile failed for {name}: {e}")
                comp = float("nan")
            rows.append({"model": name, "eager_b1_tps": eager, "compile_b1_tps": comp})
            print(f"{name:12s} torch eager {eager:8.1f} tok/s   torch.compile {comp:8.1f} tok/s")
    if a.json:
        json.dump({"torch": torch.__version__, "rows": rows}, open(a.json, "w"), indent=2)


if __name__ == "__main__":
    main()
