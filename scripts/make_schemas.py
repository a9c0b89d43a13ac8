#!/usr/bin/env python3
"""Write the JSON Schemas of the ``--json`` documents into src/ncuroof/schemas/, from
src/ncuroof/schema.py.

    .venv/bin/python scripts/make_schemas.py # (re)write analyze.schema.json and compare.schema.json
    .venv/bin/python scripts/make_schemas.py --check # exit 1 when a shipped file differs
    from what it would write

Run it after declaring or changing a column in ncuroof/schema.py; tests/test_json_doc.py fails until
the shipped files equal its output.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from ncuroof.views import schema_text  # noqa: E402

KINDS = ("analyze", "compare")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--check",
        action="store_true",
        help="only compare the shipped files with what would be written",
    )
    args = ap.parse_args()
    stale = []
    for kind in KINDS:
        path = ROOT / "src" / "ncuroof" / "schemas" / f"{kind}.schema.json"
        text = schema_text(kind)
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path)
        if not args.check:
            path.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{'stale' if args.check else 'wrote'}: {path.relative_to(ROOT)}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
