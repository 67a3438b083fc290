#!/usr/bin/env bash
# Fails when a shell script that sets pipefail pipes into a reader that can quit before its
# writer is done (`grep -q`, `grep -m N`, `head`): the writer then dies of SIGPIPE, pipefail
# turns that into a failed pipeline, and whether it happens depends on scheduling. CI's setup
# failed this way once (setup-grammars.sh, `printf | grep -q` under load: bash's printf writes
# one line per write(2)). Usage: pipefail_lint.sh ROOT; prints each offending line.
set -euo pipefail
root=${1:?usage: pipefail_lint.sh ROOT}
status=0
checked=0
while IFS= read -r -d '' f; do
  grep -q -- 'pipefail' "$f" || continue
  checked=$((checked + 1))
  # A `|` that is not `||`, then the early-exit reader.
  # Comment lines are skipped (grep -n prints N:line; a comment is N:<blanks>#).
  if hits=$(grep -n -E '(^|[^|])\|[[:space:]]*(grep[[:space:]]+(-[a-zA-Z]*[qm]|--quiet|--max-count)|head([[:space:]]|$))' "$f" | grep -v -E '^[0-9]+:[[:space:]]*#'); then
    while IFS= read -r line; do
      echo "$f:$line: pipe into an early-exit reader under pipefail (SIGPIPE race)"
    done <<<"$hits"
    status=1
  fi
done < <(find "$root/scripts" "$root/.ci" "$root/tests" -type f \( -name '*.sh' -o -path '*/.ci/*' \) \
  ! -path "$root/tests/scripts/pipefail_lint.sh" -print0)
[ "$checked" -gt 0 ] || { echo "pipefail_lint: no scripts with pipefail under $root" >&2; exit 1; }
[ "$status" = 0 ] && echo "pipefail_lint: $checked scripts clean"
exit "$status"
