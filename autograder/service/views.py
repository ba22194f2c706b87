"""What a response may show of a report, and the checks of an upload (no FastAPI here).

shown_report(report, rules, filename, language)   the report a page or JSON answer carries:
               without the instructor's lines (sandbox, timing), with the file's name as
               uploaded instead of the path on disk, and the course's feedback rules applied
               (feedback "score": no why; hide_counterexamples: those tests' counterexamples
               removed, their feedback written again without them)
check_upload(name, data)   "py" | "ipynb" | "corrupt-ipynb", or UploadRefused: the content
               decides, not only the name
"""

import copy
import json

from ..report.feedback import feedback_text

HIDDEN_TEST_KEYS = ("details", "counterexample")  # what a hidden counterexample is made of
SCORE_ONLY_KEYS = (
    "name",
    "function",
    "score",
    "max_score",
    "passed",
    "status",
    "property_zh",
    "property_en",
    "seconds",
)


def _matches(test_name, hidden):
    """A report's test name ("masks/padding_mask/x") against course.yml's (with or without the exercise)."""
    return any(test_name == h or test_name.split("/", 1)[-1] == h for h in hidden)


def shown_report(report, rules, filename, language, stored=None):
    """`stored`: the name the file has on disk, written as `filename` wherever the report says it."""
    if stored:
        r = json.loads(json.dumps(report, ensure_ascii=False).replace(stored, json.dumps(filename)[1:-1]))
    else:
        r = copy.deepcopy(report)
    for key in ("sandbox", "timing"):
        r.pop(key, None)
    r["submission"] = filename
    hidden = list(rules.hide_counterexamples)
    for ex in r.get("exercises", []):
        for i, t in enumerate(ex.get("tests", [])):
            if rules.feedback == "score":
                t = {k: t[k] for k in SCORE_ONLY_KEYS if k in t}
                t["feedback"] = feedback_text(t, language)
                ex["tests"][i] = t
            elif _matches(t.get("name", ""), hidden):
                for key in HIDDEN_TEST_KEYS:
                    t[key] = [] if key == "details" else {}
                for part in t.get("explained_by_part") or []:
                    part.pop("probe", None)
                t["feedback"] = feedback_text(t, language)
    return r


class UploadRefused(Exception):
    def __init__(self, zh, en):
        super().__init__(en)
        self.zh, self.en = zh, en


def check_upload(name, data):
    """The kind of an uploaded file, from its name and its content."""
    lower = (name or "").lower()
    if lower.endswith(".ipynb"):
        kind = "ipynb"
    elif lower.endswith(".py"):
        kind = "py"
    else:
        raise UploadRefused(
            "只接受 Jupyter 笔记本（.ipynb）或 Python 文件（.py）。",
            "Only a Jupyter notebook (.ipynb) or a Python file (.py) is accepted.",
        )
    if b"\0" in data:
        raise UploadRefused(
            "这个文件不是文本文件（可能是图片、压缩包或其他二进制文件）：请上传你的 .ipynb 或 .py 文件本身。",
            "This file is not text (an image, an archive or another binary file?): upload your "
            ".ipynb or .py file itself.",
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UploadRefused(
            "文件不是 UTF-8 编码的文本：请用 Jupyter 或编辑器另存为 UTF-8 后再上传。",
            "The file is not UTF-8 text: save it as UTF-8 (Jupyter and editors do) and upload it again.",
        ) from None
    looks_like_notebook = _notebook(text)
    if kind == "py":
        if looks_like_notebook is True:
            raise UploadRefused(
                "这是一个 Jupyter 笔记本，却以 .py 命名：请把文件名改成 .ipynb 再上传。",
                "This is a Jupyter notebook named .py: rename it to .ipynb and upload it again.",
            )
        return "py"
    if not text.lstrip().startswith("{"):
        raise UploadRefused(
            "这个 .ipynb 文件的内容不是笔记本（笔记本是以 { 开头的 JSON）：它是不是 Python 代码？那就以 .py 上传。",
            "This .ipynb file does not hold a notebook (a notebook is JSON starting with {): is it "
            "Python code? Then upload it as .py.",
        )
    if looks_like_notebook is False:
        raise UploadRefused(
            "这个 .ipynb 文件是 JSON，但不是 Jupyter 笔记本（没有 cells）。",
            "This .ipynb file is JSON but not a Jupyter notebook (it has no cells).",
        )
    return "ipynb" if looks_like_notebook else "corrupt-ipynb"  # a damaged notebook is graded: it says why


def _notebook(text):
    """True: JSON with a notebook's keys; False: JSON of something else; None: not JSON at all.
    Parsed in a child process of bounded memory (load/reader.run_limited): JSON of tiny objects
    costs its parser about 25 bytes a byte, and the service's memory must not depend on an upload."""
    from ..load.reader import run_limited

    got = run_limited(_notebook_keys, text, memory_mb=256, seconds=20)
    if isinstance(got, bool) or got is None:
        return got
    if "nested too deeply" in got:  # valid JSON nested deeper than Python can read: no notebook is
        raise UploadRefused(
            "这个文件的 JSON 嵌套太深，不是 Jupyter 笔记本。",
            "This file's JSON is nested too deeply to be a Jupyter notebook.",
        )
    raise UploadRefused(
        "这个文件的 JSON 太大，无法读取：请清除笔记本的输出后再上传。",
        "This file's JSON is too large to read: clear the notebook's outputs and upload it again.",
    )


def _notebook_keys(text):
    """(In the limited child.)  What _notebook says of `text`."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return isinstance(data, dict) and ("cells" in data or "nbformat" in data)
