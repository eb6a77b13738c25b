"""Measure a catalog model's decode and prefill step times on this machine's GPU, as corpus rows.

Run with (on a machine with a GPU and PyTorch; not part of the test suite):
    python bench/gpu/measure.py --model llama-2-7b -o data/measurements/gpu-harness-<gpu>.csv

A decoder of the catalog model's shapes (layers, widths, heads, KV heads, gated MLP, vocabulary) with random
weights, in fp16 or bf16 (fp8 is not measured yet): decode steps at several batches and
contexts over a preallocated KV cache, with CUDA graphs off and on, and prefills at several lengths. Times
are CUDA-event medians over repeated runs after warm-up. Each row is written in data/measurements/'s format
with the GPU's name, driver, CUDA and PyTorch versions and the repository commit, so the fidelity bench and
`triage calibrate` read it directly. Configurations that do not fit the GPU's memory are skipped and said so.
With --device cpu it runs a tiny smoke test of the same code (no timings worth keeping).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import functools
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from triage.inputs import catalog  # noqa: E402

HEADER = ["source_url", "source_version", "where", "quote", "engine", "engine_version", "model", "hf_model",
          "hardware", "gpus", "weights", "kv", "compute", "phase", "batch", "prompt_tokens", "output_tokens",
          "metric", "value", "notes"]
# torch's device names -> catalog keys
DEVICES = {"A100-SXM4-80GB": "a100-80gb", "A100-SXM4-40GB": "a100-40gb", "H100 80GB HBM3": "h100-sxm",
           "H100 PCIe": "h100-pcie", "H200": "h200", "L40S": "l40s", "GeForce RTX 4090": "rtx-4090",
           "Tesla T4": "t4", "L4": "l4", "A10G": "a10g", "RTX A6000": "rtx-a6000", "GeForce RTX 3090": "rtx-3090",
           "RTX 6000 Ada Generation": "rtx-6000-ada", "H800": "h800-sxm", "H20": "h20", "B200": "b200"}


class Decoder(torch.nn.Module):
    """The catalog model's layers with random weights: attention (GQA) and a gated MLP per layer."""

    def __init__(self, m: object, layers: int, dtype: torch.dtype, device: str) -> None:
        super().__init__()
        h, heads, kv, d, inter = (m.hidden_size, m.num_attention_heads, m.num_key_value_heads,  # type: ignore[attr-defined]
                                  m.head_dim, m.intermediate_size)  # type: ignore[attr-defined]
        self.heads, self.kv, self.d = heads, kv, d
        kw = {"dtype": dtype, "device": device}
        self.qkv = [torch.randn(h, (heads + 2 * kv) * d, **kw) * 0.02 for _ in range(layers)]
        self.o = [torch.randn(heads * d, h, **kw) * 0.02 for _ in range(layers)]
        self.up = [torch.randn(h, 2 * inter, **kw) * 0.02 for _ in range(layers)]
        self.down = [torch.randn(inter, h, **kw) * 0.02 for _ in range(layers)]
        self.head = torch.randn(h, m.vocab_size, **kw) * 0.02  # type: ignore[attr-defined]

    def forward(self, x: torch.Tensor, cache_k: list[torch.Tensor], cache_v: list[torch.Tensor],
                length: int) -> torch.Tensor:
        """x: batch × new tokens × hidden; the caches hold ``length`` tokens before these."""
        b, n, _ = x.shape
        for i in range(len(self.qkv)):
            q, k, v = (x @ self.qkv[i]).split([self.heads * self.d, self.kv * self.d, self.kv * self.d], dim=-1)
            q = q.view(b, n, self.heads, self.d).transpose(1, 2)
            cache_k[i][:, :, length:length + n] = k.view(b, n, self.kv, self.d).transpose(1, 2)
            cache_v[i][:, :, length:length + n] = v.view(b, n, self.kv, self.d).transpose(1, 2)
            keys, values = cache_k[i][:, :, :length + n], cache_v[i][:, :, :length + n]
            att = F.scaled_dot_product_attention(q, keys, values, is_causal=n > 1, enable_gqa=self.kv != self.heads)
            x = x + att.transpose(1, 2).reshape(b, n, -1) @ self.o[i]
            gate, up = (x @ self.up[i]).chunk(2, dim=-1)
            x = x + (F.silu(gate) * up) @ self.down[i]
        return x[:, -1] @ self.head


def timed(fn: object, device: str, repeats: int) -> float:
    """The median seconds of ``fn`` over ``repeats`` runs after warm-up (CUDA events on a GPU)."""
    for _ in range(3):
        fn()  # type: ignore[operator]
    times = []
    for _ in range(repeats):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()  # type: ignore[operator]
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            t0 = datetime.datetime.now()
            fn()  # type: ignore[operator]
            times.append((datetime.datetime.now() - t0).total_seconds())
    return statistics.median(times)


def versions(device: str) -> str:
    if device != "cuda":
        return f"torch {torch.__version__}, CPU smoke run"
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, check=False).stdout.strip().splitlines()[0]
    except (OSError, IndexError):
        driver = "unknown"
    return f"driver {driver}, CUDA {torch.version.cuda}, torch {torch.__version__}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="llama-2-7b")
    ap.add_argument("--dtype", choices=["fp16", "bf16"], default="bf16")
    ap.add_argument("--batches", default="1,8,32,64")
    ap.add_argument("--contexts", default="512,2048,8192")
    ap.add_argument("--prompts", default="128,512,2048")
    ap.add_argument("--layers", type=int, default=0, help="layers to build (default: the model's)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("-o", "--output", type=Path, required=True)
    a = ap.parse_args()
    m = catalog.load().models[a.model]
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float16
    layers = a.layers or m.num_hidden_layers
    name = torch.cuda.get_device_name() if a.device == "cuda" else "cpu"
    hardware = DEVICES.get(name.replace("NVIDIA ", ""), name)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=False).stdout.strip() or "unknown"
    net = Decoder(m, layers, dtype, a.device)
    rows = []
    stamp = datetime.date.today().isoformat()

    def row(phase: str, batch: int, prompt: int, metric: str, value: float, graphs: bool) -> None:
        note = (f"bench/gpu/measure.py on {name}; {versions(a.device)}; random weights of {a.model}'s shapes, "
                f"{layers} layers; CUDA graphs {'on' if graphs else 'off'}; median of {a.repeats}")
        rows.append({"source_url": "https://github.com/triage/triage/blob/main/bench/gpu/measure.py",
                     "source_version": commit, "where": f"bench/gpu/measure.py run {stamp}",
                     "quote": f"{phase} batch {batch} context {prompt}: {value * 1e3:.3f} ms",
                     "engine": "other", "engine_version": f"torch {torch.__version__}",
                     "model": a.model if layers == m.num_hidden_layers else "", "hf_model": a.model,
                     "hardware": hardware, "gpus": 1, "weights": a.dtype, "kv": a.dtype, "compute": a.dtype,
                     "phase": phase, "batch": batch, "prompt_tokens": prompt, "output_tokens": 1 if phase == "decode"
                     else "", "metric": metric, "value": f"{value:.6g}", "notes": note})

    with torch.inference_mode():
        for batch in map(int, a.batches.split(",")):
            for context in map(int, a.contexts.split(",")):
                shape = (batch, m.num_key_value_heads, context + 1, m.head_dim)
                try:
                    ck = [torch.randn(shape, dtype=dtype, device=a.device) for _ in range(layers)]
                    cv = [torch.randn(shape, dtype=dtype, device=a.device) for _ in range(layers)]
                except torch.OutOfMemoryError:
                    print(f"skipped decode batch {batch} context {context}: does not fit", file=sys.stderr)
                    continue
                x = torch.randn(batch, 1, m.hidden_size, dtype=dtype, device=a.device)
                step = functools.partial(net, x, ck, cv, context)
                row("decode", batch, context, "tpot_s", timed(step, a.device, a.repeats), False)
                if a.device == "cuda":
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph):
                        net(x, ck, cv, context)
                    row("decode", batch, context, "tpot_s", timed(graph.replay, a.device, a.repeats), True)
                del ck, cv
        for prompt in map(int, a.prompts.split(",")):
            shape = (1, m.num_key_value_heads, prompt, m.head_dim)
            ck = [torch.empty(shape, dtype=dtype, device=a.device) for _ in range(layers)]
            cv = [torch.empty(shape, dtype=dtype, device=a.device) for _ in range(layers)]
            x = torch.randn(1, prompt, m.hidden_size, dtype=dtype, device=a.device)
            row("prefill", 1, prompt, "ttft_s", timed(functools.partial(net, x, ck, cv, 0), a.device, a.repeats),
                False)
    with a.output.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=HEADER, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {len(rows)} rows to {a.output}")


if __name__ == "__main__":
    main()
