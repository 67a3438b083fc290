#!/usr/bin/env python3
"""The plot of tests/bench/completion_quality.py's run: next-line exact match and edit similarity
per configuration, overall / same-file / cross-file, with the 95% bootstrap intervals.

  /usr/bin/python3 tests/bench/plot_completion_quality.py benchout/completion_quality.json \\
      [--out docs/plots/completion_quality_per_config.png]

Reads the --json that completion_quality.py writes (its "table"); needs matplotlib (Debian's
python3-matplotlib, or scripts/bench/setup-plots.sh's .venv-plots). The output's format follows
its extension (.png, .svg).
"""
import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

matplotlib.rcParams["svg.hashsalt"] = "vsynth-bench-plots"
SPLITS = ["all", "same-file", "cross-file"]
COLORS = {"shipped": "#1f77b4", "window": "#ff7f0e", "llama_cpp": "#2ca02c", "near": "#9467bd"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json")
    ap.add_argument("--out", default="docs/plots/completion_quality_per_config.png")
    args = ap.parse_args()
    with open(args.json) as f:
        run = json.load(f)
    table = run["table"]
    configs = [c for c in table if not c.endswith("-window")]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    width = 0.8 / max(1, len(configs))
    for ax, metric, label, scale in [(axes[0], "exact", "next-line exact match (%)", 100),
                                     (axes[1], "edit_sim", "edit similarity", 1)]:
        for k, c in enumerate(configs):
            xs, ys, lo, hi = [], [], [], []
            for i, split in enumerate(SPLITS):
                mean, a, b = table[c][split][metric]
                xs.append(i + (k - (len(configs) - 1) / 2) * width)
                ys.append(scale * mean)
                lo.append(scale * (mean - a))
                hi.append(scale * (b - mean))
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=c,
                   color=COLORS.get(c), alpha=0.85)
        ax.set_xticks(range(len(SPLITS)))
        ax.set_xticklabels([f"{s}\n(n={table[configs[0]][s]['n']})" for s in SPLITS])
        ax.set_ylabel(label)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend()
    fig.suptitle(f"Completion quality, {run['positions']} positions x typed "
                 f"{run['args']['typed']} (95% bootstrap intervals)")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    fig.savefig(args.out, dpi=110, metadata={"Software": None} if args.out.endswith(".png")
                else {"Date": None})
    print(f"plot_completion_quality: wrote {args.out}")


if __name__ == "__main__":
    main()
