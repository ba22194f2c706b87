"""The feedback text of one test, in the course's language(s)."""
from .model import pick as _pick  # the text in the course's language

STATUS = {
    "passed": ("通过", "passed"),
    "failed": ("未通过", "failed"),
    "missing": ("缺失", "missing"),
    "error": ("出错", "error"),
    "timeout": ("超时", "time-out"),
}


def feedback_text(res, language="both"):
    """Plain text: the property, what went wrong, the counterexample, where to look."""
    lines = [f"{_pick(language, *STATUS[res.status])}: {_pick(language, res.property_zh, res.property_en)}"]
    if res.status == "passed":
        return lines[0]
    lines += diagnosis_lines(res, language)
    if language in ("zh", "both") and res.message_zh:
        lines.append(res.message_zh)
    if language in ("en", "both") and res.message_en:
        lines.append(res.message_en)
    for label, text in res.details:
        if language == "en":
            label = label.split(" ", 1)[-1] if " " in label and not label.isascii() else label
        text = str(text)
        lines.append(f"{label}:" + ("\n    " + text.replace("\n", "\n    ") if "\n" in text else f" {text}"))
    hint = _pick(language, res.hint_zh, res.hint_en, sep="\n    ")
    if hint:
        lines.append(("提示 hint" if language == "both" else "提示" if language == "zh" else "hint") + ":\n    " + hint)
    return "\n".join(lines)


PARTS_ZH = {"masks": "掩码", "positional_encoding": "位置编码", "attention": "注意力", "masked_loss": "带掩码的损失"}


def where(d, function):
    """(zh, en): where a named mistake is, when not in the test's own function: another function,
    or a part the student pasted in from an earlier exercise."""
    fn = d.get("function") or ""
    if d.get("part"):
        ex = d["part"]
        return (f"（在粘贴进来的 `{fn}` 里，来自 {PARTS_ZH.get(ex, ex)} 练习）",
                f" (in the pasted part `{fn}`, from the {ex} exercise)")
    if fn and fn != function:
        return f"（在 `{fn}` 里）", f" (in `{fn}`)"
    return "", ""


def unexplained(diagnosis):
    """(zh, en): what else differs that the named mistakes do not explain, or None."""
    for d in diagnosis or []:
        if d.get("unexplained_zh") or d.get("unexplained_en"):
            return d.get("unexplained_zh", ""), d.get("unexplained_en", "")
    return None


def diagnosis_lines(res, language="both"):
    """The catalogued mistake(s) the failure matches (autograder/diagnose/): title, explanation,
    hint, then what else differs that they do not explain.  Nothing when no mistake matched: then
    the property's own message stands alone."""
    lines = []
    for d in getattr(res, "diagnosis", None) or []:
        where_zh, where_en = where(d, res.function)
        head = {"zh": "诊断：这是一个常见错误", "en": "Diagnosis: a known mistake", "both": "诊断 diagnosis"}[language]
        title = _pick(language, d.get("title_zh", "") + where_zh, d.get("title_en", "") + where_en)
        lines.append(f"{head}: {title}")
        expl = _pick(language, d.get("explanation_zh", ""), d.get("explanation_en", ""), sep="\n    ")
        if expl:
            lines.append("    " + expl)
        hint = _pick(language, d.get("hint_zh", ""), d.get("hint_en", ""), sep="\n    ")
        if hint:
            lines.append(("    怎么改 fix: " if language == "both" else "    怎么改：" if language == "zh" else "    fix: ")
                         + hint.replace("\n    ", "\n    " + " " * 4))
    more = unexplained(getattr(res, "diagnosis", None))
    if more:
        lines.append("    " + _pick(language, *more, sep="\n    "))
    return lines
