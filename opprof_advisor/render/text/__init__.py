"""Terminal output: each document as Rich renderables (tables, lines of text) for the CLI's console.

Every renderer takes a document and keyword options (``width``: the console width, for columns
that are left out on narrow terminals) and returns a list: Rich renderables, printed by the console
(and wrapped to its width), and plain ``str`` lines, written as they are (one problem per line, for
``grep``). Text from profiles, KB
files and file names goes in as ``rich.text.Text``, never as markup; the console that prints them
(``render.console.safe_console``) drops control characters. Rich is imported inside the functions, so a
command that prints JSON never loads it.
"""
