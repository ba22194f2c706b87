"""Pairs of students: each contract function compared with the same function of the other, the
matched regions (fragments), and one score per pair.

Per function f of a pair (a, b), over the fingerprints that may be evidence (index.py):

    shared_f = sum of the rarities of the fingerprints a and b both have
    score_f  = 2 shared_f / (mass of a's f + mass of b's f)      (a weighted Dice coefficient)
    weight_f = min(1, shared_f / WHOLE)                          (a whole function shares WHOLE)

and, when the two functions have exactly the same fingerprints, which only k students of the
class have together, that whole function is evidence however common its pieces are:
rarity(k) * min(1, fingerprints / WHOLE) (a long function put together the same way by two
students, where a one-liner stays a one-liner);

and, when grading recorded the behaviour (behaviour.py), a function both fail with the same
outputs on every probe of the diagnosis, where the diagnosis named no catalogued mistake, counts
as a whole function shared (score_f = weight_f = 1, times the outputs' rarity in the class).

The pair's score puts the functions together as independent pieces of evidence, and then asks
how much of what the two wrote is shared at all:

    evidence = 1 - prod_f (1 - STRENGTH * score_f * weight_f), or, when larger, for the functions
               the two have exactly the same: rarity(k) * min(1, their fingerprints / 3 WHOLE),
               k the students who have all of them exactly so (each choice may be common, the
               same choices everywhere are not)
    overlap  = 2 sum_f shared_f / sum_f (mass of a's f + mass of b's f)   (the whole submissions'
               weighted Dice; a behaviour match counts as WHOLE shared on both sides)
    score    = evidence * overlap ** 2, or evidence alone when CASE (3) functions or more have
               strength_f >= WHOLE_STRENGTH (shared whole, rare pieces and all)

so one shared one-liner (weight ~0.2) is not a case (~0.1), one whole function shared and
nothing else written apart is a suspicion (0.6), and three whole functions are a case (0.94); two
students who happen to write two functions the same way but each write the rest their own way
(their own checks, their own habits) score lower than one who hands in another's work, where
everything rare is shared -- unless they share CASE (three) whole functions: a student who copies
three functions of another and writes the rest is a case however much else each wrote.  A pair is *flagged* at FLAG or more; flagged pairs joined by a student
form a cluster.
"""

import math
from dataclasses import dataclass, field

from ..report.messages import pair as words
from .index import rarity

WHOLE = 10.0  # the rarity-weighted fingerprints of a whole (short) function
STRENGTH = 0.6  # what one whole function shared, and nothing else, scores
FLAG = 0.5  # a pair at or above this is flagged
WHOLE_STRENGTH = 0.75  # a function shared this strongly is shared whole (its rare pieces, all of them)
CASE = 3  # whole functions shared that make a case, whatever else the two wrote
GAP = 3  # fingerprints of a fragment may skip this many tokens' worth of k-grams


@dataclass
class Fragment:
    a: tuple  # (first line, last line) in a's definition (counted from its `def` line, 1)
    b: tuple
    fingerprints: int

    def to_dict(self):
        """The fragment as JSON: its lines in a's and in b's definition, and its fingerprints' count."""
        return {"a": list(self.a), "b": list(self.b), "fingerprints": self.fingerprints}


@dataclass
class FunctionMatch:
    function: str
    score: float  # 0..1, what this function alone says
    shared: float  # rarity-weighted fingerprints both have
    fragments: list = field(default_factory=list)
    behaviour: float = 0.0  # 0..1: same wrong outputs (uncatalogued), times their rarity
    exact: float = 0.0  # 0..1: the same whole function, times how rare that whole is
    rare: int = 0  # shared fingerprints no other student of the class has
    common: int = 0  # shared fingerprints many students have (counted little)
    discounted: dict = field(default_factory=dict)  # {"starter" / "reference" / ...: shared fingerprints set aside}
    exact_students: int = 0  # students who have this function exactly so (when exact)

    @property
    def strength(self):
        """What this function alone says of the pair, 0..1: its code score weighed by how much is
        shared (up to WHOLE), or its exact or behaviour evidence where stronger."""
        code = self.score * min(1.0, self.shared / WHOLE)
        return max(code, self.exact, self.behaviour)


@dataclass
class Pair:
    a: str
    b: str
    score: float
    functions: dict  # function -> FunctionMatch
    overlap: float = 0.0  # the part of all the two wrote (rarity-weighted) that is shared
    whole: list = field(default_factory=list)  # functions shared whole (strength >= WHOLE_STRENGTH)
    discounted: dict = field(default_factory=dict)  # {what: shared fingerprints set aside}, all functions
    common: int = 0  # shared fingerprints many students have, all functions

    def summary(self):
        """What an instructor reads first: which functions are shared whole, why that is evidence,
        and what was set aside: [{zh, en}]."""
        out = []
        if self.whole:
            fns = ", ".join(self.whole)
            rare = sum(self.functions[f].rare for f in self.whole)
            out.append(_say("whole", fns=fns, n=len(self.whole), rare=rare))
            if len(self.whole) >= CASE:
                out.append(_say("case", n=CASE))
        else:
            part = [f for f, m in self.functions.items() if m.strength >= 0.2]
            out.append(_say("partly", fns=", ".join(part) or "-", pct=round(100 * min(1.0, self.overlap))))
        wrong = [f for f, m in self.functions.items() if m.behaviour > 0]
        if wrong:
            out.append(_say("wrong", fns=", ".join(wrong)))
        kinds, common = self.discounted, self.common
        if kinds:
            zh = "、".join(f"{WHAT.get(w, (w, w))[0]} {n} 个" for w, n in sorted(kinds.items()))
            en = ", ".join(f"{n} from {WHAT.get(w, (w, w))[1]}" for w, n in sorted(kinds.items()))
            out.append(_say("discounted", zh_list=zh, en_list=en))
        if common:
            out.append(_say("common", common=common))
        return out

    def evidence(self):
        """The evidence in words, strongest first: [{kind, function, zh, en, ...}]."""
        out = []
        for m in sorted(self.functions.values(), key=lambda m: -m.strength):
            if m.behaviour > 0:
                zh, en = words("similarity.same_wrong_outputs", fn=m.function)
                out.append(
                    {"kind": "behaviour", "function": m.function, "weight": round(m.behaviour, 3), "zh": zh, "en": en}
                )
            if m.shared > 0 and m.score > 0 or m.exact > 0:
                lines = sum(f.a[1] - f.a[0] + 1 for f in m.fragments)
                zh, en = words(
                    "similarity.same_structure",
                    fn=m.function,
                    pct=round(100 * m.score),
                    n=len(m.fragments),
                    lines=lines,
                )
                why = _say("rare", rare=m.rare, common=m.common)
                zh, en = zh + "；" + why["zh"], en + "; " + why["en"]
                if m.exact > 0 and m.exact_students:
                    exact = _say("exact_only" if m.exact_students <= 2 else "exact", k=m.exact_students)
                    zh, en = zh + "；" + exact["zh"], en + "; " + exact["en"]
                out.append(
                    {
                        "kind": "code",
                        "function": m.function,
                        "score": round(m.score, 3),
                        "weight": round(min(1.0, m.shared / WHOLE), 3),
                        "fragments": [f.to_dict() for f in m.fragments],
                        "zh": zh,
                        "en": en,
                    }
                )
        return out

    def to_dict(self):
        """The pair as similarity.json holds it: the two students, the score, each function's
        strength, the summary and the evidence."""
        return {
            "a": self.a,
            "b": self.b,
            "score": round(self.score, 4),
            "functions": {f: round(m.strength, 4) for f, m in sorted(self.functions.items())},
            "summary": self.summary(),
            "evidence": self.evidence(),
        }


def compare(index, a, b, behaviour=None):
    """The Pair of students a and b (behaviour: behaviour.Behaviour or None)."""
    functions, mass = {}, 0.0
    for function, by_student in index.units.items():
        ua, ub = by_student.get(a), by_student.get(b)
        if ua is None or ub is None:
            continue
        common = ua.hashes & ub.hashes
        shared = index.mass(function, common)
        total = index.mass(function, ua.hashes) + index.mass(function, ub.hashes)
        score = 2 * shared / total if total else 0.0
        mass += total
        m = FunctionMatch(function, score, shared)
        if common and ua.hashes == ub.hashes:
            m.exact_students = index.whole[function][frozenset(common)]
            m.exact = rarity(m.exact_students) * min(1.0, len(common) / WHOLE)
        if shared > 0:
            m.fragments = fragments(ua.prints, ub.prints, {h for h in common if index.rarity(function, h) > 0})
        m.rare = sum(1 for h in common if index.df[function].get(h, 0) <= 2)
        m.common = sum(1 for h in common if index.rarity(function, h) < RARE_ENOUGH)
        both_all = {fp.hash for fp in ua.prints} & {fp.hash for fp in ub.prints}
        for h in both_all:
            what = index.ignored.get(h)
            if what:
                m.discounted[what] = m.discounted.get(what, 0) + 1
        functions[function] = m
    if behaviour is not None:
        for function, weight in behaviour.same(a, b).items():
            m = functions.setdefault(function, FunctionMatch(function, 0.0, 0.0))
            m.behaviour = weight
    keep = {f: m for f, m in functions.items() if m.strength > 0}
    evidence = 1.0 - math.prod(1.0 - STRENGTH * m.strength for m in keep.values())
    # the same functions put together into one submission as nobody else in the class did
    same = [f for f, m in functions.items() if m.exact > 0]
    if same:
        who = set.intersection(*(index.having[(f, frozenset(index.units[f][a].hashes))] for f in same))
        size = sum(len(index.units[f][a].hashes) for f in same)
        evidence = max(evidence, rarity(len(who)) * min(1.0, size / (3 * WHOLE)))
    both = sum(m.shared + WHOLE * m.behaviour for m in functions.values())
    whole = mass + 2 * WHOLE * sum(m.behaviour for m in functions.values())
    overlap = 2 * both / whole if whole else 0.0
    # what is shared, as a part of everything the two wrote -- all of it when they share CASE whole
    # functions: those make a case whatever else each wrote
    shared_whole = sum(1 for m in keep.values() if m.strength >= WHOLE_STRENGTH)
    part = 1.0 if shared_whole >= CASE else min(1.0, overlap)
    whole_fns = [f for f, m in sorted(keep.items(), key=lambda kv: -kv[1].strength) if m.strength >= WHOLE_STRENGTH]
    discounted = {}
    for m in functions.values():
        for what, n in m.discounted.items():
            discounted[what] = discounted.get(what, 0) + n
    return Pair(
        a, b, evidence * part**2, keep, overlap, whole_fns, discounted, sum(m.common for m in functions.values())
    )


RARE_ENOUGH = 0.25  # a shared fingerprint of lower rarity (more than 8 students have it) counts little

WHAT = {
    "starter": ("起始代码", "the starter code"),
    "reference": ("参考答案", "the reference solutions"),
    "catalogue": ("错误目录中的常见错误", "the catalogue of common mistakes"),
    "excluded": ("--exclude 给出的公开代码", "the public code given with --exclude"),
}

SAY = {
    "whole": (
        "两人有 {n} 个函数整体相同：{fns}（其中只有这两人有的片段共 {rare} 个）",
        "{n} function(s) shared whole: {fns} ({rare} fingerprint(s) that no other student of the class has)",
    ),
    "case": (
        "按规则，{n} 个或更多完整函数相同即构成案例，与两人其余代码无关",
        "{n} or more whole functions shared make a case, whatever else each wrote",
    ),
    "partly": (
        "没有整体相同的函数；部分相同：{fns}；两人所写内容中相同部分约占 {pct}%",
        "no function shared whole; partly shared: {fns}; about {pct}% of what the two wrote is shared",
    ),
    "wrong": (
        "诊断探针上给出完全相同、且不在错误目录中的错误输出：{fns}",
        "identical wrong outputs on the diagnosis probes, from a mistake the catalogue does not hold: {fns}",
    ),
    "discounted": ("两人都有、但已排除、不算证据的片段：{zh_list}", "shared but set aside, never evidence: {en_list}"),
    "common": (
        "另有 {common} 个相同片段班上很多学生都有，只算很少",
        "{common} more shared fingerprint(s) that many students of the class have count little",
    ),
    "rare": (
        "{rare} 个相同片段班上只有这两人有，{common} 个是常见写法",
        "{rare} shared fingerprint(s) only these two of the class have, {common} common ones",
    ),
    "exact_only": (
        "班上没有别的学生把这个函数写成完全一样",
        "no other student of the class wrote this function exactly so",
    ),
    "exact": (
        "全班只有 {k} 人把这个函数写成完全一样",
        "only {k} student(s) of the class wrote this function exactly so",
    ),
}


def _say(key, **fields):
    zh, en = SAY[key]
    return {"zh": zh.format(**fields), "en": en.format(**fields)}


def fragments(prints_a, prints_b, common):
    """Runs of shared fingerprints in the same order in a and b, as line ranges of each."""
    where_b = {}
    for i, fp in enumerate(prints_b):
        if fp.hash in common:
            where_b.setdefault(fp.hash, []).append(i)
    matches = []  # (index in a, index in b)
    for i, fp in enumerate(prints_a):
        for j in where_b.get(fp.hash, []):
            matches.append((i, j))
    matches.sort()
    out, run = [], []
    used_b = set()
    for i, j in matches:
        if j in used_b:
            continue
        if run and i - run[-1][0] <= GAP and 0 < j - run[-1][1] <= GAP:
            run.append((i, j))
        else:
            if run:
                out.append(run)
            run = [(i, j)]
        used_b.add(j)
    if run:
        out.append(run)
    frags = []
    for run in out:
        la = [prints_a[i].lines for i, _ in run]
        lb = [prints_b[j].lines for _, j in run]
        frags.append(
            Fragment(
                (min(x[0] for x in la), max(x[1] for x in la)), (min(x[0] for x in lb), max(x[1] for x in lb)), len(run)
            )
        )
    return _merge(frags)


def _merge(frags):
    """Fragments whose lines overlap on both sides become one."""
    frags = sorted(frags, key=lambda f: f.a)
    out = []
    for f in frags:
        if out and f.a[0] <= out[-1].a[1] + 1 and (f.b[0] <= out[-1].b[1] + 1 and f.b[1] >= out[-1].b[0] - 1):
            g = out[-1]
            out[-1] = Fragment(
                (g.a[0], max(g.a[1], f.a[1])),
                (min(g.b[0], f.b[0]), max(g.b[1], f.b[1])),
                g.fingerprints + f.fingerprints,
            )
        else:
            out.append(f)
    return out


def clusters(pairs, flag=FLAG):
    """Groups of students joined by flagged pairs (each sorted; the largest first)."""
    parent = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for p in pairs:
        if p.score >= flag:
            parent[find(p.a)] = find(p.b)
    groups = {}
    for x in list(parent):
        groups.setdefault(find(x), []).append(x)
    return sorted((sorted(g) for g in groups.values() if len(g) > 1), key=lambda g: (-len(g), g))
