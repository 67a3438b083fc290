"""A small interval index used to answer "which spans cover this offset?" queries.

Written for the vsynth tokenizer corpus: ordinary Python with docstrings, type hints,
f-strings, comprehensions, decorators and a few non-ASCII identifiers and literals.
"""
from __future__ import annotations

import bisect
import dataclasses
from typing import Iterable, Iterator, Optional


@dataclasses.dataclass(frozen=True, order=True)
class Span:
    start: int
    end: int  # exclusive
    label: str = ""

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"span end {self.end} precedes start {self.start}")

    def __contains__(self, offset: int) -> bool:
        return self.start <= offset < self.end

    @property
    def length(self) -> int:
        return self.end - self.start


class SpanIndex:
    """Sorted spans plus a running maximum of end offsets for pruning."""

    def __init__(self, spans: Iterable[Span] = ()) -> None:
        self._spans: list[Span] = sorted(spans)
        self._max_end: list[int] = []
        running = -1
        for s in self._spans:
            running = max(running, s.end)
            self._max_end.append(running)

    def __len__(self) -> int:
        return len(self._spans)

    def __iter__(self) -> Iterator[Span]:
        return iter(self._spans)

    def covering(self, offset: int) -> list[Span]:
        # Every span starting at or before `offset` is a candidate; stop once no
        # earlier span can reach that far.
        hi = bisect.bisect_right([s.start for s in self._spans], offset)
        found = []
        for i in range(hi - 1, -1, -1):
            if self._max_end[i] <= offset:
                break
            if offset in self._spans[i]:
                found.append(self._spans[i])
        return found[::-1]

    def first_label(self, offset: int, default: Optional[str] = None) -> Optional[str]:
        hits = self.covering(offset)
        return hits[0].label if hits else default


def parse_spans(text: str) -> list[Span]:
    """Parses lines like '12..40 function' (blank lines and '#' comments are skipped)."""
    spans = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            bounds, _, label = line.partition(" ")
            a, b = (int(x) for x in bounds.split(".."))
        except ValueError as exc:
            raise ValueError(f"line {lineno}: cannot parse {raw!r}") from exc
        spans.append(Span(a, b, label.strip()))
    return spans


if __name__ == "__main__":
    idx = SpanIndex(parse_spans("""
        0..120   module
        10..60   class Span      # the dataclass
        64..118  class SpanIndex
        70..90   def covering
    """))
    for probe in (5, 15, 75, 119, 500):
        labels = [s.label for s in idx.covering(probe)]
        print(f"{probe:>4} -> {labels or '∅'}")
    größe = sum(s.length for s in idx)  # non-ASCII identifier
    print("total length:", größe, "spans:", len(idx), "— done ✓")
