"""Keep the Chinese message catalogue in step with the code: extract, merge, compile.

    python data/make_catalog.py            # extract every _() / N_() / M_() message, merge it into the .po, write the .mo
    python data/make_catalog.py --check    # exit 1 when a message has no Chinese or the .mo is stale (what the tests check)

Messages are extracted with Babel from ``opprof_advisor/`` (keywords ``_``, ``N_`` and ``M_``, the
first argument); the translations live in ``opprof_advisor/locale/zh/LC_MESSAGES/opprof_advisor.po``
(edit it by hand: a new message arrives with an empty msgstr) and are compiled to the ``.mo``
beside it, which the wheel ships and ``opprof_advisor.core.i18n`` reads with the stdlib ``gettext``.
Babel is needed only here and in the tests (``pip install '.[test]'``), never at run time.
"""

from __future__ import annotations

import argparse
import io
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "opprof_advisor"
PO = PACKAGE / "locale" / "zh" / "LC_MESSAGES" / "opprof_advisor.po"
MO = PO.with_suffix(".mo")
KEYWORDS = {"_": None, "N_": None, "M_": None}
FIXED_DATE = datetime(2026, 1, 1, tzinfo=timezone.utc)


def extract_messages() -> dict[str, list[tuple[str, int]]]:
    """Every message id marked in the package -> where it is written (path, line)."""
    from babel.messages.extract import extract_from_dir

    found: dict[str, list[tuple[str, int]]] = {}
    method_map = [("**/testing/**.py", "ignore"), ("**.py", "python")]
    for path, line, message, _comments, _context in extract_from_dir(
            str(PACKAGE), method_map=method_map, keywords=KEYWORDS, comment_tags=()):
        if isinstance(message, tuple):
            message = message[0]
        if message:
            found.setdefault(message, []).append((f"opprof_advisor/{path}", line))
    return found


def read_po():
    from babel.messages.pofile import read_po as babel_read_po

    if not PO.exists():
        from babel.messages.catalog import Catalog

        return Catalog(locale="zh_Hans_CN", project="opprof-advisor")
    with PO.open("rb") as handle:
        return babel_read_po(handle, locale="zh_Hans_CN")


def merge(catalog, messages: dict[str, list[tuple[str, int]]]):
    """The catalogue with exactly ``messages``, keeping every translation it had."""
    from babel.messages.catalog import Catalog

    # A fixed header: the .mo must compile to the same bytes from the same messages (the tests compare them).
    merged = Catalog(locale="zh_Hans_CN", project="opprof-advisor", version="0.1", fuzzy=False,
                     header_comment="# Chinese (zh) messages of opprof-advisor: edit msgstr, then run "
                                    "python data/make_catalog.py", creation_date=FIXED_DATE, revision_date=FIXED_DATE,
                     last_translator="opprof-advisor", language_team="opprof-advisor")
    for message_id in sorted(messages):
        old = catalog.get(message_id)
        merged.add(message_id, old.string if old is not None else "", locations=messages[message_id][:3])
    return merged


def compiled(catalog) -> bytes:
    from babel.messages.mofile import write_mo

    buffer = io.BytesIO()
    write_mo(buffer, catalog, use_fuzzy=False)
    return buffer.getvalue()


def untranslated(catalog) -> list[str]:
    """Message ids without Chinese."""
    return [m.id for m in catalog if m.id and not m.string]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report problems, write nothing")
    args = parser.parse_args(argv)
    catalog = merge(read_po(), extract_messages())
    missing = untranslated(catalog)
    if args.check:
        stale = not MO.exists() or MO.read_bytes() != compiled(catalog)
        for message_id in missing:
            print(f"no Chinese for: {message_id!r}")
        if stale:
            print(f"{MO.relative_to(ROOT)} is not compiled from the current catalogue: run python data/make_catalog.py")
        return 1 if missing or stale else 0
    from babel.messages.pofile import write_po

    PO.parent.mkdir(parents=True, exist_ok=True)
    with PO.open("wb") as handle:
        write_po(handle, catalog, width=120, omit_header=False, sort_output=True)
    MO.write_bytes(compiled(catalog))
    print(f"{len(catalog)} messages, {len(missing)} without Chinese; wrote {PO.relative_to(ROOT)} and "
          f"{MO.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
