"""Terminal output: each document as styled lines of text and fitted tables for the CLI's console.

Every renderer takes a document and keyword options (``width``: the console width, for columns
that are left out on narrow terminals) and returns a list: ``styled.Text`` lines and ``styled.Table``
tables (or, for a few documents, Rich renderables such as an entry's markdown body), printed by the
console (and wrapped to its width), and plain ``str`` lines, written as they are (one problem per
line, for ``grep``). Text from profiles, KB files and file names goes in as ``styled.Text``, never as
markup; the console that prints them (``render.console.safe_console``) drops control characters. On
a pipe or a file the styled items are written as the plain lines Rich would print (``render.plain``),
so a piped command never imports Rich; a terminal gets them through Rich, converted by ``to_rich``.
"""
