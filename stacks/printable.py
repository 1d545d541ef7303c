"""Text from a stack file or a command line, made safe to print.

A key, a value or a path is the user's (or an attacker's) text. Printed raw, a control character in it clears
the screen or recolours the terminal (ESC sequences), a carriage return or a line break forges a line of our
own ("error: ..." under our name), and a bidirectional override reorders what the reader sees. Every message
that echoes such text passes it through `printable`: what `str.isprintable` refuses (control, format, line and
paragraph separator characters) is shown as its Python escape, and nothing else changes.

>>> printable("a\\x1b[2Jb\\nerror: fine\\u202e")
'a\\\\x1b[2Jb\\\\nerror: fine\\\\u202e'
>>> printable("plain text, ünïcode and spaces")
'plain text, ünïcode and spaces'
"""

from __future__ import annotations


def printable(text: str) -> str:
    """`text` with every character `str.isprintable` refuses replaced by its escape (`\\x1b`, `\\n`, `\\u202e`)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
