"""A citation number with thousands of digits is text, not a 500 (issue 26, finding 5).

``int()`` refuses strings over 4,300 digits, so ``"see [" + "1" * 5000 + "]"`` raised in
``resolve_citations`` and the service answered 500.
"""

from __future__ import annotations

import time

import pytest

from contextwright import assemble
from contextwright.render.cite import parse_citation_numbers, resolve_citations

HUGE = [
    "see [" + "1" * 5000 + "]",
    "see [1-" + "9" * 5000 + "]",
    "see [" + "0" * 5000 + "2]",
    "see [1, " + "7" * 100_000 + ", 2]",
    "[" + "1" * 4301 + "] and [1]",
]


@pytest.mark.parametrize("answer", HUGE, ids=lambda a: f"{len(a)} chars")
def test_huge_numbers_are_not_citations(answer: str) -> None:
    ctx = assemble("q", [{"id": "a", "text": "Paris."}, {"id": "b", "text": "Rome."}], budget=100)
    start = time.thread_time()
    numbers = parse_citation_numbers(answer, blocks=2)
    resolved = resolve_citations(answer, ctx)
    assert time.thread_time() - start < 0.5
    plausible = [n for n in numbers if n <= 2]
    assert numbers == plausible or numbers == [2]  # '000…02' is block 2, written with zeros
    assert resolved.missing == ()


def test_the_service_answers_422_or_200_never_500() -> None:
    from fastapi.testclient import TestClient

    from contextwright.service import create_app

    client = TestClient(create_app(), raise_server_exceptions=False)
    body = {"answer": "see [" + "1" * 5000 + "]", "citations": [{"index": 1, "source": "a.md"}]}
    response = client.post("/v1/citations/resolve", json=body)
    assert response.status_code in (200, 422), response.text[:300]
    if response.status_code == 200:
        assert response.json()["numbers"] == []
