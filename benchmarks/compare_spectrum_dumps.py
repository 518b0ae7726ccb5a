"""Two ``--dump`` files of ``benchmarks/bench_spectrum_random.py`` compared number by number
(docs/THEORY.md §16): the laws in both, how many are identical (every support end, atom,
outlier's location and overlap, density value: the same float, NaN where NaN), and for the others
the largest difference relative to the law's largest density value. Run:
``python benchmarks/compare_spectrum_dumps.py A.json B.json`` (exit status 1 unless identical).
"""

from __future__ import annotations

import json
import math
import sys


def _flat(value, out: list) -> list:
    """Every number in ``value`` (nested lists and dicts, keys sorted), in order; strings kept."""
    if isinstance(value, dict):
        for k in sorted(value):
            out.append(k)
            _flat(value[k], out)
    elif isinstance(value, list | tuple):
        out.append(len(value))
        for v in value:
            _flat(v, out)
    else:
        out.append(value)
    return out


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return type(a) is type(b) and a == b


def compare(a: dict, b: dict) -> tuple[int, list[str]]:
    """(identical laws, a line per law that is not or is in one file only)."""
    lines, same = [], 0
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            lines.append(f"only in {'the second' if key not in a else 'the first'}: {key}")
            continue
        fa, fb = _flat(a[key], []), _flat(b[key], [])
        if len(fa) == len(fb) and all(_same(x, y) for x, y in zip(fa, fb, strict=True)):
            same += 1
            continue
        dens = [abs(v) for v in a[key].get("density", []) if isinstance(v, float)
                and math.isfinite(v)]
        diffs = [abs(x - y) for x, y in zip(fa, fb, strict=False) if isinstance(x, float)
                 and isinstance(y, float) and math.isfinite(x) and math.isfinite(y)]
        lines.append(f"differs: {key} (largest difference {max(diffs, default=math.nan):.3g}, "
                     f"largest density {max(dens, default=math.nan):.3g})")
    return same, lines


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if {"-h", "--help"} & set(argv):  # the usage is the docstring
        print(__doc__)
        return 0
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    with open(argv[0]) as fa, open(argv[1]) as fb:
        a, b = json.load(fa), json.load(fb)
    same, lines = compare(a, b)
    print(f"{same}/{len(set(a) | set(b))} laws identical")
    for line in lines:
        print(line)
    return 0 if same == len(set(a) | set(b)) else 1


if __name__ == "__main__":
    sys.exit(main())
