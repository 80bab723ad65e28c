"""Hints for misspelt names ("did you mean ...?") over a set of names indexed once.

A file with thousands of typos asks for thousands of hints among thousands of
names: comparing each typo with every name is quadratic (4,000 typos took 14 s).
``NearNames`` keeps the look-up's work independent of the set's size.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

#: Up to this many names, a look-up weighs every one of them with difflib.
SCAN_ALL = 200


class NearNames:
    """The names a misspelt name may have meant, among a set indexed once.

    Up to ``SCAN_ALL`` names, a look-up weighs them all (difflib, ratio 0.6 or more).
    Beyond, it weighs only the names one edit away (a letter added, dropped or
    changed, or two neighbours swapped), found through an index of every name with
    one letter dropped: what a typo usually is, in time that does not grow with the
    set."""

    def __init__(self, candidates: Iterable[str]) -> None:
        self.names = sorted(set(candidates))
        self.index: dict[str, list[str]] | None = None
        if len(self.names) > SCAN_ALL:
            self.index = defaultdict(list)
            for n in self.names:
                for variant in _one_dropped(n):
                    self.index[variant].append(n)

    def hint(self, name: str) -> str | None:
        if self.index is None:
            pool = self.names
        else:
            pool = sorted({n for v in _one_dropped(name) for n in self.index.get(v, ())})
        import difflib  # only for a finding's hint: not on every check's path

        match = difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
        return f"did you mean '{match[0]}'?" if match else None


def _one_dropped(name: str) -> set[str]:
    """The name and the names it gives with one letter dropped: two names one edit
    apart share one of these."""
    return {name, *(name[:i] + name[i + 1 :] for i in range(len(name)))}
