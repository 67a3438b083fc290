#!/usr/bin/env python3
"""Every plot of docs/performance.md, regenerated from the benchmarks' JSON in one run.

  scripts/bench/setup-plots.sh        # once: .venv-plots/ (or Debian's python3-matplotlib)
  .venv-plots/bin/python scripts/bench/plot_all.py [--results results] [--out docs/plots]

Reads from --results (default results/, git-ignored, where performance.md's commands write):
  bench_completion.json  tests/bench/bench_completion  -> completion_latency_vs_file_size.svg,
                                                          completion_latency_vs_context_length.svg
  bench_engine.json      tests/bench/bench_engine      -> engine_ratio_vs_llama_cpp.svg
                         (prefill and decode t/s, ours / llama.cpp, per context and per round)
  bench_context.json     tests/bench/bench_context     -> context_recall_vs_budget.svg
                         (gold recall of AST pruning vs a sliding window, per token budget)

A JSON that is missing is named with the command that makes it, and its plots are skipped;
the others are still drawn. Exit status: 0 when every plot present was drawn, 1 when a file
was missing or unreadable (after drawing what could be drawn).
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_completion  # noqa: E402

# Stable SVG output: the same JSON gives the same file (ids from a fixed salt, no date).
matplotlib.rcParams["svg.hashsalt"] = "vsynth-bench-plots"
METADATA = {"Date": None, "Creator": "scripts/bench/plot_all.py"}

MAKERS = {
    "bench_completion.json": "tests/bench/bench_completion ... --json results/bench_completion.json "
                             "(docs/performance.md, IDE completion latency)",
    "bench_engine.json": "tests/bench/bench_engine --threads 1 --contexts 512,4096 --decode 32 "
                         "--repeats 2 --rounds 3 results/bench_engine.json (needs llama.cpp's "
                         "venv for the ratios)",
    "bench_context.json": "scripts/bench-context.sh build-context (writes "
                          "results/bench_context.json)",
}


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, metadata=METADATA)
    plt.close(fig)
    print(f"wrote {path}")


def completion(data, out):
    rows = [r for r in data.get("requests", []) if "error" not in r]
    if not rows:
        raise ValueError("no successful request in `requests`")
    n = len({r["request"] for r in rows})
    title = f"bench_completion: {n} requests, {len(data.get('files', []))} files"
    a = os.path.join(out, "completion_latency_vs_file_size.svg")
    b = os.path.join(out, "completion_latency_vs_context_length.svg")
    plot_completion.plot_file_size(rows, a, title)
    plot_completion.plot_context(rows, b, title)
    print(f"wrote {a}\nwrote {b}")


def engine(data, out):
    rows = [r for r in data.get("rows", []) if r.get("prefill_ratio", 0) > 0]
    if not rows:
        raise ValueError("no row with llama.cpp figures (`rows[].prefill_ratio`): "
                         "bench_engine ran without llama.cpp")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key, label, marker in (("prefill", "prefill", "o"), ("decode", "decode", "s")):
        ctx = [r["context"] for r in rows]
        ax.plot(ctx, [r[f"{key}_ratio"] for r in rows], marker=marker,
                label=f"{label} (median of rounds)")
        for r in rows:  # every round, so the spread shows
            per = r.get(f"{key}_ratio_per_round", [])
            ax.scatter([r["context"]] * len(per), per, marker=marker, alpha=0.3, s=14)
    ax.axhline(1.0, color="grey", linewidth=1, linestyle="--")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("context (tokens)")
    ax.set_ylabel("tokens/s, ours / llama.cpp")
    ax.set_title(f"bench_engine: {data.get('model', '?')}, {data.get('threads', '?')} thread(s), "
                 f"{data.get('rounds', '?')} round(s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, os.path.join(out, "engine_ratio_vs_llama_cpp.svg"))


def context(data, out):
    rows = [r for r in data.get("table", []) if r.get("repo") == "all"]
    if not rows:
        raise ValueError("no `table` row for repo `all`")
    rows.sort(key=lambda r: r["budget"])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    budgets = [r["budget"] for r in rows]
    for method, marker in (("ours", "o"), ("window", "s")):
        label = "AST block pruning" if method == "ours" else "sliding window"
        ax.plot(budgets, [r[method]["recall"] for r in rows], marker=marker, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(budgets, [str(b) for b in budgets])
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("context budget (tokens)")
    ax.set_ylabel("gold recall")
    ax.set_title(f"bench_context: {rows[0].get('tasks', '?')} tasks, counter "
                 f"{data.get('counter', '?')}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, os.path.join(out, "context_recall_vs_budget.svg"))


PLOTS = [("bench_completion.json", completion), ("bench_engine.json", engine),
         ("bench_context.json", context)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default="results", help="folder of the benchmarks' JSON")
    ap.add_argument("--out", default="docs/plots", help="folder for the SVG files")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    missing = 0
    for name, plot in PLOTS:
        path = os.path.join(args.results, name)
        if not os.path.exists(path):
            print(f"plot_all: skipped {name}: {path} does not exist; made by {MAKERS[name]}",
                  file=sys.stderr)
            missing += 1
            continue
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            plot(data, args.out)
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"plot_all: skipped {name}: {path}: {e}", file=sys.stderr)
            missing += 1
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
