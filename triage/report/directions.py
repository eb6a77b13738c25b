"""The course's five directions, each with its one question, one number and one failure mode (course §2.4)."""

from __future__ import annotations

DIRECTIONS: dict[str, tuple[str, str, str]] = {
    # direction: (the course's question, its number, its failure mode) — course §2.4
    "attention": ("Are the scores written back to HBM?",
                  "T=2048: T²·2 B = 8.4 MB per head; × B·H = 2.15 GB per layer at B=8",
                  "without fusion it stays bandwidth-bound, however many FLOPs are saved"),
    "cache": ("How many KV bytes per token?",
              "0.5 MiB per token (L=32, H=32, d=128, fp16)",
              "long context runs out of memory; concurrency cannot rise"),
    "weights": ("Does quantization save bytes or FLOPs?",
                "int8 takes 14 GB of weights to 7 GB",
                "compute-bound prefill gains ~0 and dequantization can make it slower"),
    "decoding": ("Is the speculative acceptance rate high enough?",
                 "each step pays a draft plus a verification forward",
                 "at a low acceptance rate it is slower than the baseline"),
    "system": ("Where is the bottleneck at high concurrency?",
               "16 concurrent × 4096 tokens = 32 GiB of KV",
               "memory fragmentation halves the usable batch"),
}


