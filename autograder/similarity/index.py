"""The class's fingerprint index: who has which fingerprint of which function, how rare it is, and
which pairs are worth a full comparison.

``Unit``            one student's one function: its Source, its Fingerprints, and their hashes
                    less every hash of the shared code (extract.shared_sources)
``Index(units, shared)``
    .ignored        {hash: what} of the shared code: never evidence
    .df             {function: {hash: how many students have it}}
    .rarity(f, h)   1 for a fingerprint two students or fewer have, 2 / df for one df students
                    have (rarity()): an inverse document frequency, so what many write counts little
    .whole          {function: {frozenset of hashes: how many students have exactly those}}
    .having         {(function, frozenset of hashes): the students who have exactly that function}
    .candidates()   the pairs of students worth comparing: for each function, a MinHash of each
                    student's rare fingerprints (datasketch) in a MinHashLSH, queried with each
                    student; and one more MinHashLSH of each student's set of whole functions
                    (the students who wrote most functions exactly alike); 1,000 students need about 13,000 MinHashes and their buckets, not
                    half a million full comparisons per function
"""

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from .fingerprint import fingerprints, tokens
from .normalize import normalize

NUM_PERM = 64  # MinHash permutations
LSH_THRESHOLD = 0.2  # estimated Jaccard of the rare fingerprints above which a pair is compared
RARE = 0.25  # a fingerprint enters the LSH when its rarity is at least this
WHOLE_THRESHOLD = 0.5  # estimated Jaccard of two students' sets of whole functions


@dataclass
class Unit:
    student: str
    function: str
    source: object  # extract.Source
    prints: list = field(default_factory=list)  # [Fingerprint] of the canonical tree
    hashes: set = field(default_factory=set)  # the hashes that may be evidence


def fingerprint_source(source, memo=None):
    """The Fingerprints of one definition (its canonical tree's).  `memo`: a dict shared by the
    calls of one index, so that the same text (the reference pasted by many) is read once."""
    if memo is not None and source.key in memo:
        return memo[source.key]
    try:
        found = fingerprints(tokens(normalize(source.node)), offset=source.first_line - 1)
    except (RecursionError, MemoryError):
        found = []  # a tree too deep to read: nothing to compare
    except Exception:  # noqa: BLE001 - code no canonical form foresaw must not cost the class its report
        found = []
    if memo is not None:
        memo[source.key] = found
    return found


def _fingerprint_text(item):
    """fingerprint_source of a definition's text (parsed again: a worker process gets text only),
    or of its tree when the submission's aliases or helpers changed it (item: (text, tree or None))."""
    import ast

    text, tree = item
    if tree is not None:
        node = tree
    else:
        try:
            node = ast.parse(text).body[0]
        except (SyntaxError, ValueError, IndexError, RecursionError, MemoryError):
            return []
    from .extract import Source

    return fingerprint_source(Source("", text, node, "", 1))


def fingerprint_all(sources, workers=1):
    """{text: [Fingerprint]} of every distinct text among `sources`, on `workers` processes
    (forked; pure parsing, nothing of a student's is run) when there are enough of them."""
    todo = {s.key: s for s in sources}
    if workers <= 1 or len(todo) < 200:
        memo = {}
        for s in todo.values():
            fingerprint_source(s, memo)
        return memo
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    keys = list(todo)
    items = [(todo[k].text, todo[k].node if todo[k].resolved else None) for k in keys]
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork")) as pool:
        found = pool.map(_fingerprint_text, items, chunksize=max(1, len(keys) // (8 * workers)))
        return dict(zip(keys, found))


def rarity(df):
    """What a fingerprint (or a behaviour) that `df` students of the class have is worth as
    evidence: 1 when two have it (or one), 2 / df otherwise -- an inverse document frequency that
    falls fast, so that what a tenth of the class writes is worth little however large the class."""
    return 1.0 if df <= 2 else 2.0 / df


class Index:
    def __init__(self, units, shared, workers=1):
        """units: [Unit] (fingerprints computed here, on `workers` processes); shared:
        extract.shared_sources()."""
        self.ignored = {}
        self.shared_counts = []
        memo = fingerprint_all([s for _, _, sources in shared for s in sources] + [u.source for u in units], workers)
        for what, label, sources in shared:
            n = 0
            for s in sources:
                for fp in fingerprint_source(s, memo):
                    self.ignored.setdefault(fp.hash, what)
                    n += 1
            self.shared_counts.append({"what": what, "source": label, "definitions": len(sources), "fingerprints": n})
        self.units = defaultdict(dict)  # function -> {student: Unit}
        self.df = defaultdict(Counter)
        for u in units:
            u.prints = fingerprint_source(u.source, memo)
            u.hashes = {fp.hash for fp in u.prints if fp.hash not in self.ignored}
            self.units[u.function][u.student] = u
            self.df[u.function].update(u.hashes)
        # how many students have each function exactly (the same fingerprints, none more): a
        # function made of common pieces may still be put together the way only two students did
        self.whole = defaultdict(Counter)
        self.having = defaultdict(set)  # (function, frozenset of hashes) -> the students who have it
        for function, by_student in self.units.items():
            for student, u in by_student.items():
                if u.hashes:
                    key = frozenset(u.hashes)
                    self.whole[function][key] += 1
                    self.having[(function, key)].add(student)
        self.students = sorted({u.student for u in units})
        self.n = len(self.students)

    def rarity(self, function, h):
        """What fingerprint `h` of `function` is worth as evidence: `rarity` of how many students have it."""
        return rarity(self.df[function].get(h, 0))

    def mass(self, function, hashes):
        """The summed rarity of `hashes`, fingerprints of `function`."""
        return sum(self.rarity(function, h) for h in hashes)

    def candidates(self):
        """{(a, b)} with a < b: the pairs that share rare fingerprints in some function."""
        pairs = set()
        for function, by_student in self.units.items():
            rare = {s: [h for h in u.hashes if self.rarity(function, h) >= RARE] for s, u in by_student.items()}
            rare = {s: hs for s, hs in rare.items() if hs}
            if len(rare) < 2:
                continue
            names = sorted(rare)
            pairs |= _lsh_pairs(names, [[h & 0xFFFFFFFF for h in rare[s]] for s in names], LSH_THRESHOLD)
        # ... and the students who have most of their functions exactly alike, however common
        # each of those functions is (the same choices everywhere): one MinHash per student of
        # its whole functions
        wholes = {}
        for function, by_student in self.units.items():
            for s, u in by_student.items():
                if u.hashes:
                    wholes.setdefault(s, []).append(hash((function, frozenset(u.hashes))) & 0xFFFFFFFF)
        names = sorted(s for s, hs in wholes.items() if len(hs) >= 2)
        if len(names) >= 2:
            pairs |= _lsh_pairs(names, [wholes[s] for s in names], WHOLE_THRESHOLD)
        return pairs


def _lsh_pairs(names, hash_sets, threshold):
    """The pairs of `names` whose sets of 32-bit hashes MinHash LSH finds at `threshold` or above."""
    from datasketch import MinHash, MinHashLSH

    sketches = MinHash.bulk(hash_sets, num_perm=NUM_PERM, hashfunc=int)
    lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
    with lsh.insertion_session() as session:
        for s, m in zip(names, sketches):
            session.insert(s, m)
    pairs = set()
    for s, m in zip(names, sketches):
        for other in lsh.query(m):
            if other != s:
                pairs.add((min(s, other), max(s, other)))
    return pairs
