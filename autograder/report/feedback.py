"""The feedback text of one test, in the course's language(s): TestResult.feedback, the JSON's
"feedback", what Gradescope and the nbgrader cells show.  Words from report/messages.py."""

from .messages import label as _label
from .messages import pair, say
from .messages import pick as _pick
from .messages import value as _value
from .model import Status

# the statuses' words, for callers that still look them up here: {status: (zh, en)}
STATUS = {s.value: s.words() for s in Status}


class _Fields:
    """A test's dict (JSON report) read like a TestResult."""

    def __init__(self, t):
        self._t = t

    def __getattr__(self, key):
        v = self._t.get(key)
        return v if v is not None else ([] if key in ("details", "diagnosis", "explained_by_part") else "")

    def get(self, key, default=None):
        return self._t.get(key, default)


def feedback_text(res, language="both"):
    """Plain text: the property, what went wrong, the named mistake, the counterexample, the hint.
    `res` is a TestResult or a test's dict of a JSON report."""
    if isinstance(res, dict):
        res = _Fields(res)
    status = Status.of(res)
    head = _pick(language, *status.words())
    prop = _pick(language, res.property_zh, res.property_en)
    lines = [f"{head}: {prop}" if prop else head]
    if status == Status.PASSED:
        return lines[0]
    lines += diagnosis_lines(res, language)
    if language in ("zh", "both") and res.message_zh:
        lines.append(res.message_zh)
    if language in ("en", "both") and res.message_en and res.message_en != res.message_zh:
        lines.append(res.message_en)
    lines += detail_lines(res.details, language)
    hint = _pick(language, res.hint_zh, res.hint_en, sep="\n    ")
    if hint:
        lines.append(say("test.hint", language, sep=" ") + ":\n    " + hint)
    return "\n".join(lines)


PARTS_ZH = {"masks": "掩码", "positional_encoding": "位置编码", "attention": "注意力", "masked_loss": "带掩码的损失"}


def where(d, function):
    """(zh, en), to follow a named mistake's title: where it is when not in the test's own
    function: another function, or a part the student pasted in from an earlier exercise."""
    fn = d.get("function") or ""
    if d.get("part"):
        return pair("diagnosis.in_part", fn=fn, ex=d["part"], exercise=PARTS_ZH.get(d["part"], d["part"]))
    if fn and fn != function:
        return pair("diagnosis.in_function", fn=fn)
    return "", ""


def unexplained(diagnosis):
    """(zh, en): what else differs that the named mistakes do not explain, or None."""
    for d in diagnosis or []:
        if d.get("unexplained_zh") or d.get("unexplained_en"):
            return d.get("unexplained_zh", ""), d.get("unexplained_en", "")
    return None


def by_part(parts):
    """[(zh, en)]: each explanation by part (autograder/diagnose/parts/) of a function nothing
    catalogued explains: which part differs, the call that shows it, and whether something else
    differs as well."""
    out = []
    for p in parts or []:
        shown_zh, shown_en = pair("part.shown_by", call=p.get("probe", "")) if p.get("probe") else ("", "")
        zh = p.get("zh", "") + (f"（{shown_zh}）" if shown_zh else "") + "。" + p.get("else_zh", "")
        en = (
            p.get("en", "")
            + (f" ({shown_en})" if shown_en else "")
            + "."
            + (" " + p["else_en"] if p.get("else_en") else "")
        )
        out.append((zh, en))
    return out


def part_lines(parts, language, indent=""):
    """The explanations by part as lines: "哪一部分不同 Which part differs: ..."."""
    head = say("part.head", language, sep=" ")
    return [f"{indent}{head}: " + _pick(language, zh, en, sep=f"\n{indent}    ") for zh, en in by_part(parts)]


def detail_lines(details, language, skip=()):
    """The values a property showed ([[label, text]]), each label and free text in the language."""
    lines = []
    for lab, text in details or []:
        if lab in skip:
            continue
        lab = _label(lab, language)
        text = _value(text, language)
        lines.append(f"{lab}:" + ("\n    " + text.replace("\n", "\n    ") if "\n" in text else f" {text}"))
    return lines


def diagnosis_lines(res, language="both"):
    """The catalogued mistake(s) the failure matches (autograder/diagnose/): title, explanation,
    hint, then what else differs that they do not explain; or, where none matched, which part of
    the function differs (found by experiment).  Nothing when neither: then the property's own
    message stands alone."""
    lines = []
    if isinstance(res, dict):
        res = _Fields(res)
    function = res.function
    for d in getattr(res, "diagnosis", None) or []:
        where_zh, where_en = where(d, function)
        title = _pick(language, d.get("title_zh", "") + where_zh, d.get("title_en", "") + where_en)
        lines.append(f"{say('diagnosis.short', language, sep=' ')}: {title}")
        expl = _pick(language, d.get("explanation_zh", ""), d.get("explanation_en", ""), sep="\n    ")
        if expl:
            lines.append("    " + expl)
        hint = _pick(language, d.get("hint_zh", ""), d.get("hint_en", ""), sep="\n    ")
        if hint:
            lines.append(
                f"    {say('diagnosis.fix', language, sep=' ')}: " + hint.replace("\n    ", "\n    " + " " * 4)
            )
    more = unexplained(getattr(res, "diagnosis", None))
    if more:
        lines.append("    " + _pick(language, *more, sep="\n    "))
    lines += part_lines(getattr(res, "explained_by_part", None), language)
    return lines
