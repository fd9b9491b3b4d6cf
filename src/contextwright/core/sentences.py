"""Sentence segmentation with character spans into the original text.

Why our own splitter. Compression keeps whole sentences and cites them by
character offsets, so a splitter must return exact spans, be deterministic,
and be fast: it runs at query time on every chunk that does not fit. We
measured two maintained libraries against this splitter, on the fixture of
tricky cases in ``tests/fixtures/sentence_cases.json`` (46 cases) and on the
6,000 chunk texts of the shared NQ dev data (``python bench/bench_sentences.py``,
one run)::

    splitter        fixture  time (s)  x ours
    contextwright    45/46      0.106     1.0
    pysbd 0.3.4      43/46     10.613   100.6   (pure Python, ~1.8 ms per chunk)
    blingfire 0.1.8  39/46      0.656     6.2   (native; splits '"Stop!" he said',
                                                 misses breaks before digits,
                                                 non-ASCII capitals, blank lines)

The fixture was written alongside this splitter, so its accuracy column
flatters us; on real chunks pysbd and this splitter disagree on 38 of 988
distinct texts, in both directions (pysbd splits after "Hon." and inside
"What's My Line?"; we keep "6 p.m. Monkeys" together). What decides is speed:
pysbd alone would cost ~35 ms for a 20-chunk query, ten times the whole
compression budget (3 ms), and blingfire misses cases that matter for
extractive output (a quote followed by a lowercase verb). So the splitter is a
dependency-free regex scan, and neither library is a dependency.

Rules (in order):

* A candidate end is a run of ``.``, ``!``, ``?`` or ``…``, optionally
  followed by closing quotes or brackets, and then whitespace. A dot inside a
  token (``3.14``, ``example.com/a.html``, ``e.g.,``) is never a candidate.
* It is not an end when the next word starts with a lowercase letter
  (``approx. five``, ``"Stop!" he said``), or when the token before the dot is
  a single capital letter (``J. K. Rowling``) or an abbreviation that
  precedes a name or a number (``Dr.``, ``St.``, ``No.``, ``vs.``, ``e.g.``).
* A blank line always ends a sentence, and so does a line break before a list
  marker (``-``, ``*``, ``•``, ``1.``).

Example:
    >>> text = "Dr. Smith paid $3.50. He left."
    >>> [text[s:e] for s, e in split_sentences(text)]
    ['Dr. Smith paid $3.50.', 'He left.']
"""

from __future__ import annotations

import re

__all__ = ["sentences", "split_sentences"]

# ., !, ? or … runs, then closing quotes/brackets and reference marks ([1]), then whitespace.
# Linear (issue 26): a match starts only where a run starts (the lookbehind), and the possessive
# quantifiers never give back, so each run is scanned once; the spans are the same as those of
# the old backtracking pattern, which rescanned a run from each of its positions ('?' * 20000
# took 14.7 s): a start inside a run consumes the same suffix and fails the same way. The
# pattern opens with the run's first character and looks behind it second (the same matches as
# "(?<![.!?…])[.!?…]++"), so the engine skips to candidate characters at C speed instead of
# trying the lookbehind at every position: 11.8 -> 3.2 µs a dev chunk.
_CANDIDATE = re.compile(r"[.!?…](?<![.!?…][.!?…])[.!?…]*+[\"'”’»)\]]*+(?:\[\d{1,3}\])*+(?=\s)")
_NAME = re.compile(r"[A-Z][a-z]+")
_ACRONYM = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")
_BREAK = re.compile(r"\n[ \t]*\n\s*|\n(?=[ \t]*(?:[-*•·]|\d{1,3}[.)])\s)")
# The token before a candidate dot (letters and inner dots, e.g. "e.g", "U.S").
_TOKEN_BEFORE = re.compile(r"([^\s\"'“‘(\[]+)$")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Abbreviations that are (almost) never the last word of a sentence: titles,
# and words that introduce what follows them.
_NEVER_END = _words(
    """
    mr mrs ms mx dr prof sr jr st mt ft gen col lt capt sgt cpl maj adm cmdr gov sen rep pres rev fr
    hon messrs mme mlle vs v cf e.g i.e viz approx ca c op al ed eds est dept univ assn bros jan feb mar apr jun jul aug sep sept oct nov dec
    """
)
# Abbreviations that end a sentence when the next word is capitalized
# ("... and Co. The firm") but are more often mid-sentence.
# Abbreviations that introduce a number ("No. 1", "Fig. 3", "pp. 10"); "no." before
# anything else is the word "no".
_BEFORE_NUMBER = _words("no nos fig figs vol vols pp p ch sec art eq eqs ref refs")
_MAYBE_END = _words("etc inc ltd co corp llc plc u.s u.k u.n a.m p.m ph.d b.c a.d d.c")


def _is_end(text: str, start: int, end: int) -> bool:
    """Whether the candidate ``text[start:end]`` (punctuation run) ends a sentence."""
    # The first word after the whitespace, skipping opening quotes and brackets.
    i, n = end, len(text)
    while i < n and text[i].isspace():
        i += 1
    while i < n and text[i] in "\"'“‘«([":
        i += 1
    if i >= n:
        return True
    nxt = text[i]
    if nxt.islower():
        return False
    punct = text[start:end]
    if not punct.startswith(".") or punct.startswith(".."):
        return True  # "!", "?", "…" and "..." end a sentence before a capital
    m = _TOKEN_BEFORE.search(text, max(0, start - 24), start)
    if m is None:
        return True
    token = m.group(1)
    if len(token) == 1 and token.isupper():
        return False  # an initial: "J. K. Rowling", "John F. Kennedy"
    word = token.lower().rstrip(".")
    if word in _NEVER_END:
        return False
    if word in _BEFORE_NUMBER:
        return not nxt.isdigit()
    if "." in word and nxt.isdigit():
        return False  # a dotted abbreviation before a number: "Pub.L. 112"
    if word in _MAYBE_END:
        return nxt.isupper() and not _starts_name(text, i)
    # "U.S.A." style acronyms and dotted initials "J.R.R." followed by a name.
    return not (_ACRONYM.fullmatch(token) and nxt.isupper() and _starts_name(text, i))


def _starts_name(text: str, i: int) -> bool:
    """A capitalized word that is not a common sentence opener (a name after ``U.S.``)."""
    m = _NAME.match(text, i)  # no slice: a copy of the rest per candidate was quadratic
    return m is not None and m.group(0) not in _OPENERS


_OPENERS = _words(
    """The A An In On At It He She They We I This That These Those There His Her Its Their Our
    But And Or So Yet However After Before When While As If Although Since During Following
    Today Then Thus Also Some Many Most All Each Both One Two Three"""
)


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans ``(start, end)`` into ``text``, in order, whitespace trimmed.

    ``text[start:end]`` is each sentence; the text between spans is only
    whitespace, so the spans together cover every non-space character.
    """
    cuts: list[int] = []
    for m in _CANDIDATE.finditer(text):
        if _is_end(text, m.start(), m.end()):
            cuts.append(m.end())
    for m in _BREAK.finditer(text):
        cuts.append(m.start())
    cuts.sort()
    spans: list[tuple[int, int]] = []
    prev = 0
    for cut in [*cuts, len(text)]:
        s, e = prev, cut
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            spans.append((s, e))
        prev = max(prev, cut)
    return spans


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` as strings."""
    return [text[s:e] for s, e in split_sentences(text)]
