"""The class similarity report (for instructors): who wrote the same code, or the same wrong outputs.

A pipeline, one file per step (after Dolos' core: tokenized file, winnowing, fingerprint index,
pairs and fragments), the fingerprints kept as data so that every view is one renderer:

    extract.py       each submission's contract functions, read with ast (never run), and the
                     code everyone shares (starter code, reference, catalogue, --exclude)
    normalize.py     a function's canonical tree: names, docstrings, dead code, no-ops, order of
                     independent statements, loops and comprehensions, temporaries
    fingerprint.py   tokens of the canonical tree, k-grams, winnowing
    index.py         who has which fingerprint, how rare it is in the class, MinHash LSH candidates
    behaviour.py     the probe outputs grading recorded, compared (never run again)
    pairs.py         a pair's functions compared, fragments, the pair's score, clusters
    html.py          similarity.html
    cli.py           ``seqgrader similarity`` (and grade-batch --similarity): analyse, write
"""
