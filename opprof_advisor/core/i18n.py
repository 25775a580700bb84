"""The language of what advisor prints: English by default, Chinese with ``--lang zh``.

One stdlib ``gettext`` catalogue (``locale/zh/LC_MESSAGES/opprof_advisor.po``, compiled to the
``.mo`` beside it and shipped in the wheel) holds the Chinese of every message. Code marks a
message with ``_()`` where it is written (``_("cannot judge {what}: {why}").format(...)``), so
the English text is the message id and English output costs one comparison: the catalogue is
only opened the first time a Chinese message is asked for.

The language is chosen once per command: ``--lang``, else ``ADVISOR_LANG``, else the locale
(``LC_ALL``, ``LC_MESSAGES``, ``LANG``: ``zh_*`` means Chinese), else English. Ids, keys, file
names and numbers never change with the language; only the sentences do.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
import gettext

#: The languages advisor speaks, with their HTML ``lang`` attribute.
LANGS: dict[str, str] = {"en": "en", "zh": "zh-CN"}
DOMAIN = "opprof_advisor"
LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"

_state: dict[str, Any] = {"lang": None, "catalog": None}


def lang_from_env(environ: Any = None) -> str:
    """``ADVISOR_LANG`` when it names a language, else ``zh`` for a ``zh_*`` locale, else ``en``."""
    environ = os.environ if environ is None else environ
    chosen = normalise_lang(environ.get("ADVISOR_LANG"))
    if chosen:
        return chosen
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = environ.get(name)
        if value:  # the first one set decides, as in setlocale(3)
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def normalise_lang(value: str | None) -> str | None:
    """``zh`` / ``en`` from ``zh``, ``zh_CN.UTF-8``, ``zh-CN``, ``cn``, ``en_US`` ...; None for anything else."""
    if not value:
        return None
    value = value.strip().lower()
    if value.startswith(("zh", "cn")):
        return "zh"
    if value.startswith(("en", "c.", "posix")) or value == "c":
        return "en"
    return None


def set_lang(lang: str | None) -> str:
    """Use ``lang`` (``en`` / ``zh``; None: from the environment) from now on; return it."""
    _state["lang"] = normalise_lang(lang) or lang_from_env()
    return _state["lang"]


def current_lang() -> str:
    """The language in use (chosen from the environment on first use)."""
    return _state["lang"] or set_lang(None)


def html_lang() -> str:
    """The ``<html lang>`` value of the language in use."""
    return LANGS[current_lang()]


def _(message: str) -> str:
    """``message`` in the language in use (the English text itself when the catalogue has none)."""
    if current_lang() == "en" or not message:
        return message
    return _catalog().gettext(message)


def N_(message: str) -> str:
    """Mark ``message`` for the catalogue without translating it yet (tables of words kept in English)."""
    return message


def _catalog():
    if _state["catalog"] is None:
        _state["catalog"] = gettext.translation(DOMAIN, LOCALE_DIR, languages=["zh"], fallback=True)
    return _state["catalog"]


class Message(str):
    """English text that remembers the template it was made from, so a renderer can say it in Chinese.

    The core keeps writing English (its notes, symptom details and reasons are data: compared, cached,
    printed as JSON); a ``Message`` *is* that English string. ``localize`` turns it into the language
    in use from its template, so a note reads in Chinese in the table while the JSON stays stable.
    """

    __slots__ = ("template", "values")

    def __new__(cls, template: str, **values: Any) -> "Message":
        self = super().__new__(cls, template.format(**values))
        self.template = template
        self.values = values
        return self

    def __reduce__(self):  # worker processes send notes back pickled: keep the template
        return (_rebuild, (self.template, self.values))


def _rebuild(template: str, values: dict[str, Any]) -> Message:
    return Message(template, **values)


def M_(template: str, **values: Any) -> Message:
    """``template.format(**values)`` as a Message (and ``template`` marked for the catalogue)."""
    return Message(template, **values)


def join_messages(parts: list[Any], sep: str = ", ") -> Message:
    """``sep.join(parts)`` as a Message, so each part that is a Message is said in the language in use."""
    template = sep.join("{p%d}" % i for i in range(len(parts)))
    return Message(template, **{f"p{i}": part for i, part in enumerate(parts)})


def localize(text: Any) -> str:
    """``text`` in the language in use: a Message from its template, any other text if the catalogue has it."""
    if current_lang() == "en" or not isinstance(text, str):
        return text if isinstance(text, str) or text is None else str(text)
    if isinstance(text, Message):
        values = {key: localize(value) if isinstance(value, str) else value for key, value in text.values.items()}
        try:
            return _(text.template).format(**values)
        except (KeyError, IndexError, ValueError):  # a translation that lost a placeholder: say it in English
            return str.__str__(text)
    return _catalog().gettext(text) if text else text
