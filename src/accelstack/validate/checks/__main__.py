"""``python -m accelstack.validate.checks --readme [README.md]``: write the README's table of checks from the
declarations (between its ``checks:begin``/``checks:end`` markers); ``--check`` only says whether it is current
(exit 1 when not; alone it checks the project's README.md). Without the flags: print the table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ...errors import AccelstackError
from ...paths import project_root
from ..registry import load_registry
from . import readme_table, with_readme_table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m accelstack.validate.checks", description=__doc__)
    parser.add_argument("--readme", nargs="?", const="", metavar="README",
                        help="rewrite the table in this README (default: the project's README.md)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the README's table is not current (the project's README.md unless --readme "
                             "names one); writes nothing")
    args = parser.parse_args(argv)
    try:
        table = readme_table(load_registry())
        if args.readme is None and not args.check:
            sys.stdout.write(table)
            return 0
        path = Path(args.readme) if args.readme else project_root() / "README.md"
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        if not text:
            print(f"accelstack: no README at {path}", file=sys.stderr)
            return 3
        updated = with_readme_table(text, table, where=str(path))
    except AccelstackError as err:
        print(f"accelstack: {err}", file=sys.stderr)
        return 3
    if args.check:
        if updated != text:
            print(f"{path}: the table of checks is not what the declarations give; run "
                  f"python -m accelstack.validate.checks --readme", file=sys.stderr)
            return 1
        return 0
    if updated != text:
        path.write_text(updated, encoding="utf-8")
        print(f"{path}: table of checks rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
