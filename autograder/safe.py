"""Text that a submission controls, made safe for the people and the files it reaches.

A student decides the name of their file, the message of the exceptions their code raises, the
strings it returns, and whatever their worker process sends.  Before any of it reaches a report,
a terminal, a log line, a web page or a spreadsheet it passes through here, in the trusted process:

    clean(text)        no control character but newline and tab (no ANSI or OSC escape that clears
                       a screen, moves the cursor, sets a title or writes a clipboard), no C1
                       control, no bidirectional override or isolate ("Trojan Source"), no lone
                       surrogate (a file name that is not UTF-8: its bytes are shown as \\xNN)
    cap(text, chars, lines)   clean() and at most `lines` lines and `chars` characters (a " …" says so)
    name(text)         one line of at most NAME_CHARS characters: a student id, a file name
    one_line(text, limit)   clean(), its whitespace runs as one space, at most `limit` characters
    csv_cell(value)    a spreadsheet cell that is never run as a formula (OWASP's CSV injection
                       advice: a cell whose first character is = + - @, a tab or a carriage
                       return, or their full-width forms, gets a leading apostrophe)

Every cap is a fixed number: whatever a submission does, nothing it controls grows a report, a
page or a log line past it.
"""

import re

# C0 controls but \t and \n, DEL, C1 controls; bidi embeddings, overrides and isolates; the line
# and paragraph separators (a line break a terminal does not count as one)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_SURROGATE = re.compile("[\ud800-\udfff]")
NAME_CHARS = 120
_FORMULA = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def _escape(match):
    ch = match.group()
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (os.fsdecode's surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def clean(text):
    """`text` (any object: str() of it) without what a terminal, a browser or a spreadsheet would act on."""
    if not isinstance(text, str):
        try:
            text = str(text)
        except Exception:  # noqa: BLE001 - a hostile __str__
            return "<unprintable>"
    if text.isprintable():  # the common case: nothing to do
        return text
    text = _SURROGATE.sub(_escape, text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub(_escape, text)


def cap(text, chars=300, lines=4):
    """clean(`text`): its first `lines` lines and `chars` characters, " …" when something was cut."""
    text = clean(text)
    short = "\n".join(text.splitlines()[:lines]) if text.count("\n") >= lines else text
    if len(short) > chars:
        short = short[:chars]
    return short if short == text else short + " …"


def name(text, chars=NAME_CHARS):
    """A name to show on one line (a student id, a file name): clean, no newline or tab, capped."""
    text = clean(text).replace("\n", "\\n").replace("\t", "\\t")
    return text if len(text) <= chars else text[: chars - 1] + "…"


def one_line(text, limit=300):
    """clean(`text`) on one line (runs of whitespace as one space), at most `limit` characters."""
    text = re.sub(r"\s+", " ", clean(text)).strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def csv_cell(value):
    """`value` as a spreadsheet cell that cannot be a formula (numbers stay numbers)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    text = clean("" if value is None else value)
    return "'" + text if text.lstrip(" ")[:1] in _FORMULA else text
