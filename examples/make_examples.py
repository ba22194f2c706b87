"""Regenerate the bundled example submissions from the reference solutions.

    python examples/make_examples.py

alice.py      everything correct, one file
bob.ipynb     a notebook with four classic mistakes (off-by-one causal mask, softmax over queries,
              LSTM gates in the order i, f, o, g, loss averaged per sequence)
carol/        a folder: sin/cos swapped, an endless loop in MultiHeadAttention, no recurrent code,
              a syntax error in the loss
dave.ipynb    a corrupt notebook (truncated JSON)
"""
import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SOL = ROOT / "solutions"
OUT = ROOT / "examples" / "submissions"
EXERCISES = ["masks", "positional_encoding", "attention", "recurrent", "masked_loss"]


def sol(name):
    return (SOL / f"{name}.py").read_text(encoding="utf-8")


def replace(src, old, new):
    assert old in src, old
    return src.replace(old, new)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "alice.py").write_text("# Alice: all five exercises in one file.\n"
                                  + "\n\n".join(sol(e) for e in EXERCISES), encoding="utf-8")

    srcs = {e: sol(e) for e in EXERCISES}
    srcs["masks"] = replace(srcs["masks"], ".tril()  # (T, T)", ".tril(-1)  # (T, T)")
    srcs["attention"] = replace(srcs["attention"], "torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=-2)")
    srcs["recurrent"] = replace(srcs["recurrent"], "i, f, g, o = gates.chunk(4, dim=-1)", "i, f, o, g = gates.chunk(4, dim=-1)")
    srcs["masked_loss"] = replace(
        srcs["masked_loss"],
        "    valid_logits = logits[mask]",
        "    per_token = F.cross_entropy(logits.transpose(1, 2), targets.clamp(0, V - 1), reduction='none')\n"
        "    per_seq = (per_token * mask).sum(1) / mask.sum(1).clamp(min=1)\n"
        "    return per_seq.mean()\n"
        "    valid_logits = logits[mask]")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells.append(nbformat.v4.new_markdown_cell("# Bob's submission\nFour classic mistakes, one per cell."))
    for e in EXERCISES:
        nb.cells.append(nbformat.v4.new_code_cell(srcs[e]))
    nb.cells.append(nbformat.v4.new_code_cell("%matplotlib inline\nprint(causal_mask(3))"))
    nbformat.write(nb, OUT / "bob.ipynb")

    carol = OUT / "carol"
    carol.mkdir(exist_ok=True)
    (carol / "masks.py").write_text(sol("masks"), encoding="utf-8")
    (carol / "positional_encoding.py").write_text(
        re.sub(r"pe\[:, 0::2\] = torch.sin\(angle\)(.*)\n(\s*)pe\[:, 1::2\] = torch.cos\(angle\)",
               r"pe[:, 0::2] = torch.cos(angle)\1\n\2pe[:, 1::2] = torch.sin(angle)", sol("positional_encoding")),
        encoding="utf-8")
    (carol / "attention.py").write_text(replace(
        sol("attention"), "        B, Tq, _ = x_q.shape\n",
        "        B, Tq, _ = x_q.shape\n        while True:  # oops\n            pass\n"), encoding="utf-8")
    (carol / "masked_loss.py").write_text(replace(sol("masked_loss"), "if n_valid == 0:", "if n_valid == 0"),
                                          encoding="utf-8")

    text = nbformat.writes(nb)
    (OUT / "dave.ipynb").write_text(text[: len(text) // 2], encoding="utf-8")


if __name__ == "__main__":
    main()
