"""The C word profiles (``contextwright._native``, issue 33) against the Python ones they replace.

The two hash differently (each keyed per process), so what must agree is everything containment
reads from a profile: the number of words, and which shingles are equal. On the dev lists, whose
chunks hold copies across chunkers, the stage must then give the same chunks, strips and drops on
either, and the build must fall back to pure Python where no extension is built.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from contextwright.core.caches import clear_all
from contextwright.model.chunk import Chunk
from contextwright.model.convert import chunks_from_dicts
from contextwright.render.format import get_format
from contextwright.render.meter import Meter
from contextwright.stages import containment, profiles
from contextwright.stages.containment import ContainmentDedup
from contextwright.stages.shingles import shingle_words
from contextwright.tokens import get_tokenizer

from ..conftest import REPO, SHARED_DATA, _read_jsonl_gz

HAS_CC = shutil.which("cc") is not None or shutil.which("gcc") is not None
native = profiles._native
pytestmark = pytest.mark.skipif(
    native is None and not HAS_CC, reason="no C compiler: the module is not built"
)

LISTS = [SHARED_DATA / "nq_mirrors_dev300.jsonl.gz", SHARED_DATA / "nq_bm25_dev300.jsonl.gz"]


def _lists(n: int) -> list[tuple[Chunk, ...]]:
    if not all(p.exists() for p in LISTS):
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return [chunks_from_dicts(q["chunks"], empty=[]) for p in LISTS for q in _read_jsonl_gz(p, n)]


def _same_partition(a: Sequence[int], b: Sequence[int]) -> bool:
    """Whether ``a[i] == a[j]`` exactly where ``b[i] == b[j]``."""
    return len(a) == len(b) and len(set(a)) == len(set(b)) == len(set(zip(a, b, strict=True)))


def test_a_machine_with_a_c_compiler_builds_it_and_uses_it() -> None:
    """CI installs with a compiler: this fails where the build hook fell back to pure Python."""
    assert native is not None, (
        "a C compiler is here, yet contextwright._native was not built: see pip's output"
    )
    assert profiles.NATIVE is not None and profiles.implementation() == "c"


def test_words_and_equal_shingles_agree_with_python_on_every_dev_text() -> None:
    texts = list(dict.fromkeys(c.text for chunks in _lists(300) for c in chunks))
    texts += [  # scripts, digits, marks, folds and spaces the regex's \w decides on
        "Émile Zola's «J'accuse…!» — ﬁrst printed 1898",
        "Straße STRASSE strasse ǅemal ﬀ x\u00a0y\u2003z\u3000w a\u2028b a\u200bb",
        "東京都 は 日本 の 首都 です。 ٣٤ ٥ २०२४ Ⅻ ½ ² x̧ e\u0301 \u0301a",
        "emoji 🙂 between 🙂words, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 and Ω Ωmega ΣΊΣΥΦΟΣ",
        "x" * 10_000 + " y",
        "é" * 1_000 + " " + "東" * 300 + " and a word longer than the C scratch buffer's first 256 bytes",
        "",
        " \n\t ",
        "a_b 9 c",
    ]
    non_ascii = 0
    for text in texts:
        for k in (2, 8):
            py_n, py_h = profiles._py_profile(text, k)
            c_n, c_h = profiles._c_profile(text, k)
            assert c_n == py_n == len(shingle_words(text)), text[:80]
            assert isinstance(c_h, bytes) and isinstance(py_h, tuple)
            c_ints = tuple(memoryview(c_h).cast("Q"))
            assert len(c_ints) == len(py_h) == max(0, py_n - k + 1)
            assert _same_partition(c_ints, py_h), text[:80]
        non_ascii += not text.isascii()
    assert len(texts) > 3_900 and non_ascii > 100  # both C paths ran (one pass, and words from Python)


def test_the_ascii_pass_finds_the_words_python_finds() -> None:
    text = "The QUICK-brown fox_1, (2019) jumps; over the lazy dog\u0000 again and again: Again."
    assert native.ascii_profile(text, 3)[1] == native.word_hashes(shingle_words(text), 3)
    assert native.ascii_profile(text, 3)[0] == 14
    # case folds, punctuation separates, underscore and digits belong to words
    assert native.word_hashes([b"again"] * 3, 3) == native.ascii_profile("AGAIN again Again", 3)[1]
    assert native.ascii_profile("a b", 3) == (2, b"")


def test_word_bounds_agree_with_python_on_every_dev_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """The strip's word bounds, over the whole text and over every other line (as boilerplate
    lines leave them out), on every dev text, ASCII or not, and on words whose normal form is
    more words, fewer, or none."""
    texts = list(dict.fromkeys(c.text for chunks in _lists(300) for c in chunks))
    texts += [
        "",
        "...",
        "a",
        " a_1 (b) c.",
        "x\n\ny z\nw",
        "Émile Zola's «J'accuse…!» — ﬁrst printed 1898",
        "½ cup, x² and ﬀ: Straße ǅemal",  # NFKC: "1⁄2" is two words, "x2" one, "ff" one
        "ａｂｃ　ｄｅｆ ①② 東京都 は 日本 e\u0301 \u0301a",
        "Ⅻ x\u0345 ᾳ word",  # a word whose folded form ends or starts with a mark
    ]
    compared = non_ascii = 0
    for text in texts:
        lines, at = [], 0
        for line in text.split("\n"):
            lines.append((at, at + len(line)))
            at += len(line) + 1
        for ranges in ([(0, len(text))], lines[::2]):
            monkeypatch.setattr(profiles, "_impl", profiles.PYTHON)
            words = sum(len(shingle_words(text[a:b])) for a, b in ranges)
            py = [containment._word_bounds(text, ranges, n) for n in (words, words + 1)]
            monkeypatch.setattr(profiles, "_impl", profiles.NATIVE)
            c = [containment._word_bounds(text, ranges, n) for n in (words, words + 1)]
            assert c == py, text[:80]
            assert py[1] is None  # a count that disagrees
            compared += 1
        non_ascii += not text.isascii()
    assert compared > 7_000 and non_ascii > 100
    # the C pass itself, where the normal form counts differently from the words as written
    assert native.word_bounds("½ x", [(0, 3)]) == ([0, 0, 2], [1, 1, 3])  # "1⁄2": 1 and 2
    assert native.word_bounds("naïve ﬁne", [(0, 9)]) == ([0, 6], [5, 9])


def test_the_table_keeps_the_first_owner_of_each_shingle() -> None:
    """ShingleTable against the Python walk's sets (``_SetTable``), on the same hashes: what a
    visit finds (the main owner, ties included, and the covered runs) and what it keeps."""
    import random
    import struct

    rnd = random.Random(7)
    pool = [rnd.getrandbits(64) for _ in range(3_000)]  # enough to grow the C table many times
    c, py = native.ShingleTable(), containment._SetTable()
    assert len(c) == 0
    found = ties = 0
    for owner in range(400):
        ints = tuple(rnd.choice(pool) for _ in range(rnd.randint(0, 60)))
        packed = struct.pack(f"={len(ints)}Q", *ints)
        signed = tuple(h - (1 << 64) if h >= 1 << 63 else h for h in ints)
        k = rnd.choice((2, 8))
        got = c.visit(packed, k, owner)
        assert got == py.visit(signed, k, owner)
        if got is not None:
            found += 1
            counts = [o for o in py.owners(signed) if o is not None]
            ties += sum(counts.count(o) == counts.count(got[0]) for o in set(counts)) > 1
            if rnd.random() < 0.8:  # a dropped chunk is never added
                c.add(packed, owner)
                py.add(signed, owner)
    assert len(c) == len(py.seen) > 2_000 and found > 150 and ties > 10


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="ASCII"):
        native.ascii_profile("café au lait", 2)
    with pytest.raises(ValueError, match="k must be at least 1"):
        native.ascii_profile("a b c", 0)
    with pytest.raises(TypeError, match="item 1 is str"):
        native.word_hashes([b"a", "b", b"c"], 2)
    with pytest.raises(TypeError):
        native.word_hashes((b"a", b"b"), 2)  # a list, as shingle_words gives
    with pytest.raises(ValueError, match=r"range \(2, 9\) is outside the text of 5 characters"):
        native.word_bounds("a b c", [(2, 9)])
    with pytest.raises(ValueError, match=r"range \(0, 6\) is outside the text of 5 characters"):
        native.word_bounds("naïve", [(0, 6)])
    with pytest.raises(TypeError, match="a range is a"):
        native.word_bounds("a b c", [(1, 2, 3)])
    with pytest.raises(TypeError, match=r"a range is a \(start, end\) tuple; got list"):
        native.word_bounds("a b c", [[0, 1]])
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        native.word_bounds("a b c", [(1, "x")])
    table = native.ShingleTable()
    with pytest.raises(TypeError, match="bytes of 8-byte values"):
        table.add(b"1234567", 0)
    with pytest.raises(TypeError, match="bytes of 8-byte values"):
        table.visit((1, 2), 8, 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="owner must be a chunk's index"):
        table.add(b"12345678", -1)
    with pytest.raises(ValueError, match="owner must be a chunk's index"):
        table.visit(b"12345678", 8, -1)
    with pytest.raises(ValueError, match="k must be at least 1"):
        table.visit(b"12345678", 0, 0)
    with pytest.raises(TypeError, match="takes no arguments"):
        native.ShingleTable(8)  # type: ignore[call-arg]
    assert len(table) == 0 and table.visit(b"", 8, 0) is None and len(table) == 0
    assert native.word_bounds("ab, cd_9 e", [(0, 10)]) == ([0, 4, 9], [2, 8, 10])
    assert native.word_bounds("ab, cd_9 e", [(1, 5), (9, 10)]) == ([1, 4, 9], [2, 5, 10])


def test_the_hash_is_keyed_per_process() -> None:
    """Like Python's own str hash: another process hashes the same words differently, so a text
    cannot be written offline to collide with another."""
    code = "from contextwright import _native; print(_native.ascii_profile('one two three four', 2)[1])"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PYTHONHASHSEED": "0"}
    runs = {
        subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout
        for _ in range(2)
    }
    assert len(runs) == 2


def test_containment_decides_alike_on_either(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same kept text, strips and drops on the mirrors and BM25 dev lists."""
    lists = _lists(40)

    def outcomes(impl: object) -> list[object]:
        monkeypatch.setattr(profiles, "_impl", impl)
        clear_all(per_object=False)  # profiles cached under one hash never meet the other's
        out: list[object] = []
        for chunks in lists:
            for stage, budget in ((ContainmentDedup(), 300), (ContainmentDedup(reach=0), None)):
                meter = Meter(get_format("lean"), get_tokenizer("cl100k_base"))
                got = stage(chunks, meter=meter, budget=budget)
                report = got.report.to_dict()
                del report["ms"]
                out.append(([c.to_dict() for c in got.chunks], report))
        return out

    c, python = outcomes(profiles.NATIVE), outcomes(profiles.PYTHON)
    clear_all(per_object=False)
    assert c == python
    drops = sum(len(report["dropped"]) for _, report in c)  # type: ignore[index]
    strips = sum(len(report["changed"]) for _, report in c)  # type: ignore[index]
    assert drops > 100 and strips > 20  # the comparison decided something on either


PURE = """
import gzip, json, sys
sys.modules["contextwright._native"] = None  # as if installed without a C compiler
import contextwright
from contextwright.stages import containment, profiles
out = [profiles.implementation()]
for line in list(gzip.open(sys.argv[1], "rt"))[:30]:
    q = json.loads(line)
    ctx = contextwright.Assembler("qa", budget=500, tokenizer="cl100k_base").assemble(q["question"], q["chunks"])
    out.append(ctx.text)
print(json.dumps(out))
"""


def test_without_the_extension_the_package_falls_back_to_the_same_contexts() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}

    def run(code: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", code, str(LISTS[0])], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        got: list[str] = json.loads(done.stdout)
        return got

    if not LISTS[0].exists():
        pytest.skip(f"shared data not found at {LISTS[0]}")
    pure, c = run(PURE), run(PURE.replace('sys.modules["contextwright._native"] = None', "pass"))
    assert (pure[0], c[0]) == ("python", "c")
    assert pure[1:] == c[1:] and len(pure) == 31


@pytest.mark.skipif(not HAS_CC, reason="no C compiler")
def test_the_wheel_carries_the_extension_and_builds_pure_without_it(tmp_path: Path) -> None:
    def wheel(env: dict[str, str], out: Path) -> zipfile.ZipFile:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                str(REPO),
                "--no-deps",
                "--no-build-isolation",
                "-q",
                "-w",
                str(out),
            ],
            env={**os.environ, **env},
            check=True,
            capture_output=True,
            timeout=300,
        )
        (built,) = out.glob("*.whl")
        return zipfile.ZipFile(built)

    with wheel({"CONTEXTWRIGHT_PURE": ""}, tmp_path / "native") as whl:
        names = whl.namelist()
        assert any(n.startswith("contextwright/_native.") and n.endswith(".so") for n in names), names
        assert "Root-Is-Purelib: false" in whl.read("contextwright-0.1.0.dist-info/WHEEL").decode()
    with wheel({"CONTEXTWRIGHT_PURE": "1"}, tmp_path / "pure") as whl:
        assert not any(n.endswith((".so", ".pyd")) for n in whl.namelist())
        assert "Root-Is-Purelib: true" in whl.read("contextwright-0.1.0.dist-info/WHEEL").decode()
        assert whl.filename is not None and whl.filename.endswith("-py3-none-any.whl")
