#!/usr/bin/env python3
"""The completion quality bench: does the IDE pipeline predict the next line better than the
editor's own window on the same model? Client-side, through `vsynth serve`, with llama.vim's
exact request bodies, on projects the pipeline was never tuned on.

Corpus: scripts/bench/setup-completion-corpus.sh (tomlkit, python-dateutil, lz4, go-toml:
Python, C, Go; pinned). Positions: --positions-per-repo lines per project, picked with --seed
from the library files of >= --min-lines lines (tests left out), each a real code line (not a
comment, >= 8 characters), then more cross-file ones until each project has
--min-cross-per-repo of them (the splits are reported apart), each replayed at each --typed count of characters typed after the
indentation (0, 2, 5). At 0 the line holds only its indentation, which llama.vim sends as an
empty cursor line (its rule for a line of whitespace).

A position is cross-file when its line uses a name (>= 3 characters, not a keyword) that appears
nowhere else in its file but in another file of the project; same-file otherwise.

Each request is what llama.vim (autoload/llama.vim, fim_ctx_local and the /infill request)
sends: input_prefix = the 256 lines above, prompt = the cursor line up to the cursor,
input_suffix = the rest of the line + the 64 lines below, input_extra = its ring of up to 16
chunks of 33 lines ({text, time, filename}; here picked, with the seed, from the 8 other files
of the project that share the most names with the cursor's file: the files a user would have
open), n_predict, n_indent, top_k 40, top_p 0.90, cache_prompt, t_max_prompt_ms 500,
t_max_predict_ms 1000, id_slot 0, stream false; and no file name. Configurations:
  shipped    vsynth serve pipelines/complete.yaml (or --pipeline), model "complete"
  window     vsynth serve of a pipeline of generate.llm alone (greedy, the same model, the same
             pool size): the request's own window is the prompt; a model without FIM tokens
             (the default) sees the 256 lines above and the typed characters
  llama_cpp  llama.cpp (llama-cpp-python from .venv-bench, same GGUF, 2 threads, greedy) on the
             window prompt, its prompt cache on (it reuses the longest common token prefix)
Every request is greedy (temperature 0) and, with --stop-newline (the default), stops at the end
of its first line: the metrics read only that line, and greedy decoding gives the same first
line either way. Positions run in order, each at 0, 2 and 5 typed characters in turn, as a user
types: the prefix caches see the keystroke pattern they are built for.

Metrics per configuration: next-line exact match (the predicted rest of the line equals the
real one, trailing whitespace aside) and edit similarity (1 - Levenshtein / longer length), with
95% bootstrap intervals over requests, split by same-file / cross-file, language and typed
count; the shipped - window difference with a paired bootstrap interval; latency P50/P95.

  scripts/bench/setup-completion-corpus.sh
  .venv-bench/bin/python tests/bench/completion_quality.py --vsynth build/tools/vsynth/vsynth \\
      [--positions-per-repo 40] [--typed 0,2,5] [--configs shipped,window,llama_cpp] \\
      [--limit 0] [--json build/benchout/completion_quality.json]

A benchmark, never part of the test suite. The table is printed; the JSON holds every request.
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

LANGS = {".py": "python", ".c": "c", ".h": "c", ".go": "go"}
KEYWORDS = {
    "python": set("""False None True and as assert async await break class continue def del elif
        else except finally for from global if import in is lambda nonlocal not or pass raise
        return try while with yield self cls print len str int isinstance super""".split()),
    "c": set("""auto break case char const continue default do double else enum extern float for
        goto if inline int long register restrict return short signed sizeof static struct switch
        typedef union unsigned void volatile while size_t NULL define ifdef ifndef endif include
        uint8_t uint16_t uint32_t uint64_t int8_t int16_t int32_t int64_t""".split()),
    "go": set("""break case chan const continue default defer else fallthrough for func go goto if
        import interface map package range return select struct switch type var nil true false
        err string int int64 uint8 byte bool error len make append""".split()),
}
N_PREFIX, N_SUFFIX, RING_CHUNKS, RING_CHUNK_LINES, RING_FILES = 256, 64, 16, 33, 8


# --- the corpus and its positions ---

def is_test(rel):
    parts = rel.replace("\\", "/").split("/")
    name = parts[-1]
    return (any(p in ("test", "tests", "testing", "testdata", "benchmark") for p in parts[:-1])
            or name.startswith("test_") or name.endswith("_test.go") or name == "conftest.py")


def load_repo(root):
    files = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            ext = os.path.splitext(name)[1]
            if ext not in LANGS:
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            try:
                with open(path, encoding="utf-8") as f:
                    files[rel] = f.read()
            except UnicodeDecodeError:
                continue
    return files


def names(text):
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))


def is_code_line(line, lang):
    s = line.strip()
    if len(s) < 8:
        return False
    comment = ("#",) if lang == "python" else ("//", "/*", "*")
    if s.startswith(comment) or s.startswith(('"""', "'''")):
        return False
    return bool(re.search(r"[A-Za-z0-9]", s))


def pick_positions(repo, files, per_repo, min_cross, min_lines, seed):
    rng = random.Random(f"{seed}:{repo}")
    eligible = sorted(r for r, t in files.items()
                      if not is_test(r) and t.count("\n") >= min_lines)
    if not eligible:
        return []
    weights = [files[r].count("\n") for r in eligible]
    other_names = {r: names(t) for r, t in files.items()}
    picked, seen, tries = [], set(), 0
    n_cross = lambda: sum(p["kind"] == "cross-file" for p in picked)  # noqa: E731
    while (len(picked) < per_repo or n_cross() < min_cross) and tries < per_repo * 400:
        tries += 1
        rel = rng.choices(eligible, weights)[0]
        lang = LANGS[os.path.splitext(rel)[1]]
        lines = files[rel].split("\n")
        idx = rng.randrange(20, len(lines) - 1)
        if (rel, idx) in seen or not is_code_line(lines[idx], lang):
            continue
        seen.add((rel, idx))
        rest_of_file = "\n".join(lines[:idx] + lines[idx + 1:])
        used = {w for w in names(lines[idx]) if len(w) >= 3 and w not in KEYWORDS[lang]}
        here = names(rest_of_file)
        cross = any(w not in here and any(w in other_names[o] for o in files if o != rel)
                    for w in used)
        if len(picked) >= per_repo and not cross:
            continue  # the quota is met: only cross-file positions now, up to min_cross
        picked.append({"repo": repo, "path": rel, "line": idx, "language": lang,
                       "kind": "cross-file" if cross else "same-file"})
    return picked


def ring_chunks(repo_files, rel, rng):
    """llama.vim's input_extra: up to 16 chunks of 33 lines from the files a user would have
    open (the 8 other files sharing the most names with this one), as {text, time, filename}."""
    mine = names(repo_files[rel])
    others = sorted((o for o in repo_files if o != rel),
                    key=lambda o: (-len(mine & names(repo_files[o])), o))[:RING_FILES]
    chunks = []
    for o in others:
        lines = repo_files[o].split("\n")
        for _ in range(RING_CHUNKS // RING_FILES):
            l0 = rng.randrange(0, max(1, len(lines) - RING_CHUNK_LINES // 2))
            text = "\n".join(lines[l0:l0 + RING_CHUNK_LINES]) + "\n"
            chunks.append({"text": text, "time": [int(time.time()), 0], "filename": o})
    return chunks[:RING_CHUNKS]


def llama_vim_request(text, idx, typed, extra, n_predict):
    lines = text.split("\n")
    line = lines[idx]
    indent = len(line) - len(line.lstrip())
    middle = line[:indent + typed] if typed > 0 else ""  # a line of whitespace: sent as ""
    body = {
        "id_slot": 0,
        "input_prefix": "\n".join(lines[max(0, idx - N_PREFIX):idx]) + "\n",
        "input_suffix": "\n" + "\n".join(lines[idx + 1:idx + 1 + N_SUFFIX]) + "\n",
        "input_extra": extra,
        "prompt": middle,
        "n_predict": n_predict,
        "stop": [],
        "n_indent": indent if typed > 0 else 0,
        "top_k": 40,
        "top_p": 0.90,
        "samplers": ["top_k", "top_p", "infill"],
        "stream": False,
        "cache_prompt": True,
        "t_max_prompt_ms": 500,
        "t_max_predict_ms": 1000,
        "response_fields": ["content", "timings/prompt_n", "timings/prompt_ms",
                            "timings/predicted_n", "timings/predicted_ms", "truncated",
                            "tokens_cached"],
    }
    target = line[len(middle):] if typed > 0 else line.strip()
    return body, target


# --- metrics ---

def levenshtein(a, b):
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def score(prediction, target, typed):
    first = prediction.split("\n", 1)[0]
    if typed == 0:
        first, target = first.strip(), target.strip()
    p, t = first.rstrip(), target.rstrip()
    longest = max(len(p), len(t))
    return {"exact": p == t, "edit_sim": 1.0 if longest == 0 else 1 - levenshtein(p, t) / longest,
            "first_line": first}


def bootstrap(values, rounds, rng):
    if not values:
        return (float("nan"),) * 3
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(rounds))
    return (sum(values) / n, means[int(0.025 * rounds)], means[int(0.975 * rounds) - 1])


# --- the configurations ---

class Server:
    def __init__(self, vsynth, pipelines, model, env_extra=None):
        env = dict(os.environ, VSYNTH_MODEL=model, **(env_extra or {}))
        self.proc = subprocess.Popen([vsynth, "serve", *pipelines, "--port", "0", "--quiet"],
                                     stderr=subprocess.PIPE, text=True, env=env)
        deadline = time.time() + 300
        self.port = None
        while time.time() < deadline and self.port is None:
            line = self.proc.stderr.readline()
            if not line:
                break
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
        if self.port is None:
            self.close()
            sys.exit("completion_quality: vsynth serve did not start")
        # Keep reading its stderr (errors): a full pipe would block the server.
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()

    def infill(self, model, body, timeout=120):
        data = json.dumps(dict(body, model=model)).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/infill", data=data,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:
            return {"content": "", "error": f"HTTP {e.code}: {e.read()[:300]!r}"}

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


WINDOW_YAML = """pipeline: window
resources:
  coder: {{ use: model.gguf, with: {{ path: "${{VSYNTH_MODEL:-}}", kv_cache: f16{pool} }} }}
stages:
  generate: {{ use: generate.llm, with: {{ model: coder, mode: complete, max_new_tokens: 48,
                                          temperature: 0.0 }} }}
edges:
  - generate -> out
"""


class LlamaCpp:
    def __init__(self, model, seed):
        import llama_cpp  # from .venv-bench (scripts/golden/setup-logits.sh installs it)
        self.llm = llama_cpp.Llama(model_path=model, n_ctx=8192, n_threads=2, seed=seed,
                                   verbose=False)

    def infill(self, body):
        prompt = body["input_prefix"] + body["prompt"]
        stop = ["\n"] if body.get("stop") == ["\n"] else []
        out = self.llm.create_completion(prompt, max_tokens=body["n_predict"], temperature=0.0,
                                         top_k=1, stop=stop or None)
        return {"content": out["choices"][0]["text"]}


# --- the run ---

def summarize(records, configs, rounds, seed):
    rng = random.Random(seed)
    table = {}
    for c in configs:
        rows = [r for r in records if r["config"] == c]
        entry = {}
        for split, keep in [("all", lambda r: True),
                            ("same-file", lambda r: r["kind"] == "same-file"),
                            ("cross-file", lambda r: r["kind"] == "cross-file")] + \
                [(lang, (lambda lang: lambda r: r["language"] == lang)(lang))
                 for lang in sorted({r["language"] for r in rows})] + \
                [(f"typed={t}", (lambda t: lambda r: r["typed"] == t)(t))
                 for t in sorted({r["typed"] for r in rows})]:
            sel = [r for r in rows if keep(r)]
            entry[split] = {
                "n": len(sel),
                "exact": bootstrap([float(r["exact"]) for r in sel], rounds, rng),
                "edit_sim": bootstrap([r["edit_sim"] for r in sel], rounds, rng),
            }
        lat = sorted(r["ms"] for r in rows)
        entry["latency_ms"] = {"p50": lat[len(lat) // 2] if lat else None,
                               "p95": lat[min(len(lat) - 1, int(0.95 * len(lat)))] if lat else None}
        table[c] = entry
    # The decision: shipped - window, paired by request.
    if "shipped" in configs and "window" in configs:
        by_key = {}
        for r in records:
            by_key.setdefault(r["key"], {})[r["config"]] = r
        for split in ("all", "same-file", "cross-file"):
            pairs = [v for v in by_key.values() if "shipped" in v and "window" in v and
                     (split == "all" or v["shipped"]["kind"] == split)]
            for metric in ("exact", "edit_sim"):
                diffs = [float(p["shipped"][metric]) - float(p["window"][metric]) for p in pairs]
                table.setdefault("shipped-window", {}).setdefault(split, {})[metric] = \
                    bootstrap(diffs, rounds, rng)
    return table


def print_table(table, configs):
    fmt = "{:<10} {:<11} {:>5}  {:>22}  {:>22}"
    print(fmt.format("config", "split", "n", "exact match % [95% CI]", "edit sim [95% CI]"))
    for c in configs:
        for split, v in table[c].items():
            if split == "latency_ms":
                continue
            e, s = v["exact"], v["edit_sim"]
            print(fmt.format(c, split, v["n"],
                             f"{100 * e[0]:.1f} [{100 * e[1]:.1f}, {100 * e[2]:.1f}]",
                             f"{s[0]:.3f} [{s[1]:.3f}, {s[2]:.3f}]"))
        lat = table[c]["latency_ms"]
        print(f"{c:<10} latency P50 {lat['p50']:.0f} ms, P95 {lat['p95']:.0f} ms")
    for split, v in table.get("shipped-window", {}).items():
        e, s = v["exact"], v["edit_sim"]
        print(f"shipped - window, {split}: exact {100 * e[0]:+.1f} pts [{100 * e[1]:+.1f}, "
              f"{100 * e[2]:+.1f}], edit sim {s[0]:+.3f} [{s[1]:+.3f}, {s[2]:+.3f}]")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vsynth", default=os.path.join(root, "build/tools/vsynth/vsynth"))
    ap.add_argument("--corpus", default=os.path.join(root, ".cache/completion-corpus/src"))
    ap.add_argument("--pipeline", default=os.path.join(root, "pipelines/complete.yaml"))
    ap.add_argument("--model", default=os.environ.get("VSYNTH_MODEL") or
                    os.path.join(root, "models/gemma-3-270m-q4_k_m.gguf"))
    ap.add_argument("--positions-per-repo", type=int, default=40)
    ap.add_argument("--min-cross-per-repo", type=int, default=15,
                    help="past --positions-per-repo, add cross-file positions up to this many")
    ap.add_argument("--min-lines", type=int, default=300)
    ap.add_argument("--typed", default="0,2,5")
    ap.add_argument("--configs", default="shipped,window,llama_cpp")
    ap.add_argument("--n-predict", type=int, default=48)
    ap.add_argument("--stop-newline", type=int, default=1)
    ap.add_argument("--window-pool-mb", type=int, default=64,
                    help="kv_pool_mb of the window pipeline's model (0: none)")
    ap.add_argument("--limit", type=int, default=0, help="stop after this many positions (0: all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--json", default=os.path.join(root, "build/benchout/completion_quality.json"))
    args = ap.parse_args()
    configs = [c for c in args.configs.split(",") if c]
    typed_counts = [int(t) for t in args.typed.split(",")]

    # Phase 1: positions and their requests, the same for every configuration.
    repos = sorted(d for d in os.listdir(args.corpus) if os.path.isdir(os.path.join(args.corpus, d)))
    if not repos:
        sys.exit(f"completion_quality: no projects under {args.corpus} "
                 "(run scripts/bench/setup-completion-corpus.sh)")
    requests = []
    for repo in repos:
        files = load_repo(os.path.join(args.corpus, repo))
        rng = random.Random(f"{args.seed}:ring:{repo}")
        for pos in pick_positions(repo, files, args.positions_per_repo, args.min_cross_per_repo,
                                  args.min_lines, args.seed):
            extra = ring_chunks(files, pos["path"], rng)
            indent_line = files[pos["path"]].split("\n")[pos["line"]]
            for typed in typed_counts:
                if len(indent_line.strip()) <= typed + 2:
                    continue
                body, target = llama_vim_request(files[pos["path"]], pos["line"], typed, extra,
                                                 args.n_predict)
                if args.stop_newline:
                    body["stop"] = ["\n"]
                requests.append(dict(pos, typed=typed, body=body, target=target,
                                     key=f"{repo}:{pos['path']}:{pos['line']}:{typed}"))
    if args.limit:
        keys = sorted({(r["repo"], r["path"], r["line"]) for r in requests})
        keep = set(random.Random(args.seed).sample(keys, min(args.limit, len(keys))))
        requests = [r for r in requests if (r["repo"], r["path"], r["line"]) in keep]
    positions = len({(r["repo"], r["path"], r["line"]) for r in requests})
    print(f"completion_quality: {positions} positions, {len(requests)} requests, "
          f"{len(repos)} projects ({', '.join(repos)})", flush=True)

    # Phase 2: every configuration over every request, in order.
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        window = os.path.join(tmp, "window.yaml")
        pool = f", kv_pool_mb: {args.window_pool_mb}" if args.window_pool_mb else ""
        with open(window, "w") as f:
            f.write(WINDOW_YAML.format(pool=pool))
        for config in configs:
            if config == "llama_cpp":
                runner = LlamaCpp(args.model, args.seed)
                ask = runner.infill
            elif config in ("shipped", "window"):
                path = args.pipeline if config == "shipped" else window
                runner = Server(args.vsynth, [path], args.model)
                name = os.path.splitext(os.path.basename(path))[0]  # what serve names it
                ask = (lambda runner, name: lambda body: runner.infill(name, body))(runner, name)
            else:
                sys.exit(f"completion_quality: unknown configuration {config!r}")
            try:
                for i, r in enumerate(requests):
                    t0 = time.perf_counter()
                    answer = ask(r["body"])
                    ms = 1000 * (time.perf_counter() - t0)
                    s = score(answer.get("content", ""), r["target"], r["typed"])
                    records.append({k: r[k] for k in ("repo", "path", "line", "language", "kind",
                                                      "typed", "target", "key")} |
                                   s | {"config": config, "ms": ms,
                                        "error": answer.get("error"),
                                        "timings": answer.get("timings")})
                    if (i + 1) % 25 == 0:
                        print(f"  {config}: {i + 1}/{len(requests)}", flush=True)
            finally:
                if hasattr(runner, "close"):
                    runner.close()

    # Phase 3: the table and the JSON.
    table = summarize(records, configs, args.bootstrap, args.seed)
    print_table(table, configs)
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"args": vars(args), "positions": positions, "table": table,
                   "records": records}, f, indent=1)
    print(f"completion_quality: wrote {args.json}")


if __name__ == "__main__":
    main()
