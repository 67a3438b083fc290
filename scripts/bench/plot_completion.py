#!/usr/bin/env python3
"""Plots of the completion benchmark (tests/bench/bench_completion.cpp) from its JSON.

Writes, for every configuration of the run (naive, pruning, +int8, +spec, +pool and the
naive-full-file reference where it ran):
  docs/plots/completion_latency_vs_file_size.svg       request latency against the file's lines
  docs/plots/completion_latency_vs_context_length.svg  request latency against its prompt tokens

  scripts/bench/setup-plots.sh      # once: .venv-plots/ with the pinned matplotlib
  .venv-plots/bin/python scripts/bench/plot_completion.py bench_completion.json [--out docs/plots]

Requests that failed (an `error` in the JSON) are left out and counted on stderr.
"""
import argparse
import json
import os
import statistics
import sys

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

# Stable SVG output: the same JSON gives the same file (ids from a fixed salt, no date).
matplotlib.rcParams["svg.hashsalt"] = "vsynth-bench-completion"
METADATA = {"Date": None, "Creator": "scripts/bench/plot_completion.py"}

ORDER = ["naive", "pruning", "+int8", "+spec", "+pool", "naive-full-file"]
MARKERS = {"naive": "o", "pruning": "s", "+int8": "^", "+spec": "D", "+pool": "*",
           "naive-full-file": "x"}


def load(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    rows = [r for r in data.get("requests", []) if "error" not in r]
    failed = len(data.get("requests", [])) - len(rows)
    if failed:
        print(f"plot_completion: {failed} failed requests left out", file=sys.stderr)
    if not rows:
        raise SystemExit(f"plot_completion: {path} holds no successful request")
    return data, rows


def by_config(rows):
    configs = {}
    for r in rows:
        configs.setdefault(r["config"], []).append(r)
    return [(c, configs[c]) for c in ORDER if c in configs] + \
        [(c, v) for c, v in configs.items() if c not in ORDER]


def plot_file_size(rows, out, title):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, rs in by_config(rows):
        sizes = sorted({r["lines"] for r in rs})
        med = [statistics.median(r["latency_ms"] for r in rs if r["lines"] == s) for s in sizes]
        ax.scatter([r["lines"] for r in rs], [r["latency_ms"] / 1000 for r in rs],
                   marker=MARKERS.get(name, "o"), alpha=0.35, s=18)
        ax.plot(sizes, [m / 1000 for m in med], marker=MARKERS.get(name, "o"),
                label=f"{name} (median)")
    ax.set_xlabel("file size (lines)")
    ax.set_ylabel("latency per completion (s)")
    ax.set_yscale("log")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, metadata=METADATA)
    plt.close(fig)


def plot_context(rows, out, title):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, rs in by_config(rows):
        ax.scatter([r["prompt_tokens"] for r in rs], [r["latency_ms"] / 1000 for r in rs],
                   marker=MARKERS.get(name, "o"), alpha=0.7, s=22, label=name)
    ax.set_xlabel("context length (prompt tokens)")
    ax.set_ylabel("latency per completion (s)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, metadata=METADATA)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="bench_completion's --json output")
    ap.add_argument("--out", default="docs/plots", help="folder for the SVG files")
    args = ap.parse_args()
    data, rows = load(args.json)
    os.makedirs(args.out, exist_ok=True)
    n = len({r["request"] for r in rows})
    title = f"bench_completion: {n} requests, {len(data.get('files', []))} files"
    a = os.path.join(args.out, "completion_latency_vs_file_size.svg")
    b = os.path.join(args.out, "completion_latency_vs_context_length.svg")
    plot_file_size(rows, a, title)
    plot_context(rows, b, title)
    print(f"wrote {a}\nwrote {b}")


if __name__ == "__main__":
    main()
