"""The English HTML pages recorded in ``tests/golden/html``: which documents, and how a page is compared.

The pages are rendered from the hand-built documents of ``html_docs`` and from the recorded JSON
documents of ``tests/golden`` (so no ranking or reader change moves them). The stylesheet and the
version are left out of the recording: the test is about the words and numbers a page writes.

    .venv/bin/python tests/html_golden.py --write     # record today's English pages (review the diff)
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOLDEN_HTML = HERE / "golden" / "html"

#: page name -> (document maker name in html_docs, or a tests/golden JSON file, the profile document or None).
PAGES = {
    "suggest": ("yolo_suggest_doc", "yolo_profile_doc"),
    "suggest-without-profile": ("yolo_suggest_doc", None),
    "suggest-empty": ("empty_suggest_doc", None),
    "profile": ("yolo_profile_doc", None),
    "compare": ("compare_doc", None),
    "compare-kernel": ("kernel_compare_doc", None),
    "scan": ("scan_doc", None),
    "suggest-yolov8_torch_npu": ("suggest-yolov8_torch_npu.json", None),
    "profile-system_msprof": ("profile-system_msprof.json", None),
    "roofline-matmul_msopprof": ("roofline-matmul_msopprof.json", None),
    "compare-nms": ("compare-nms.json", None),
    "scan-fixture": ("scan-fixture.json", None),
}


def document(name: str) -> dict:
    """A hand-built document of html_docs by its function name, or a recorded JSON document by file name."""
    if name.endswith(".json"):
        return json.loads((HERE / "golden" / name).read_text(encoding="utf-8"))
    if name == "empty_suggest_doc":
        return {"schema": "opprof-advisor/suggest/2", "suggestions": [], "rest": None, "notes": []}
    import html_docs

    return getattr(html_docs, name)()


def render_page(name: str) -> str:
    """The page ``name`` of PAGES in the language in use."""
    from opprof_advisor.render import render

    doc_name, profile_name = PAGES[name]
    options = {"profile_doc": document(profile_name)} if profile_name else {}
    return render(document(doc_name), "html", **options)


def comparable(page: str) -> str:
    """The page without its stylesheet and with the version as a placeholder."""
    from opprof_advisor import __version__

    page = re.sub(r"<style>\n.*?</style>", "<style>…</style>", page, count=1, flags=re.S)
    return page.replace(f"opprof-advisor {__version__}", "opprof-advisor VERSION")


def write_golden() -> None:
    from opprof_advisor.core.i18n import set_lang

    set_lang("en")
    GOLDEN_HTML.mkdir(parents=True, exist_ok=True)
    for name in PAGES:
        (GOLDEN_HTML / f"{name}.html").write_text(comparable(render_page(name)), encoding="utf-8")
        print(f"wrote {GOLDEN_HTML / name}.html")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    sys.path.insert(0, str(HERE))
    write_golden()
