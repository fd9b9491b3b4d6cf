"""Batch assembly: many queries at once, in local processes or on Ray Data.

Offline jobs (evaluation runs, RAG fine-tuning data, nightly re-assembly
after re-indexing) assemble a context for every query of a file.
:func:`assemble_many` takes an iterable of queries and yields one
:class:`BatchRow` per query, **in input order**, using worker processes that
each build one :class:`~contextwright.assembly.assembler.Assembler` (so token caches
and store connections live as long as the worker). :func:`run_batch` goes
file to file, locally or as a Ray Data pipeline (``read_binary_files`` →
the one input reader, :func:`contextwright.inputs.readers.read_records` → ``map_batches``
with a callable class holding one assembler per actor → either the rows
streamed back in order into one file, or, for a directory ``OUT``, part
files written by Ray in parallel with ``write_parquet`` or a JSON Lines sink).

Output does not depend on the engine or the number of workers: each row is
assembled by the same function from the same input, rows keep their input
order, and per-stage timings (the only thing that varies between runs) are
left out unless ``timings=True``.

A row that fails (malformed JSON, a chunk without text, a store timeout)
becomes an error row ``{"id", "where", "error", "input"}`` (``where`` is
``file:line`` or ``file[row]``, as every command names input); the job goes on.

Example:
    >>> from contextwright.batch import assemble_many
    >>> for row in assemble_many(queries, preset="qa", budget=500, workers=2):
    ...     print(row.id, row.record["tokens"] if row.ok else row.error)

Ray is optional (extra ``ray``) and imported only when ``engine="ray"``.

Modules: ``rows`` (settings, one row), ``local`` (the process pool),
``files`` (reading and writing files), ``ray`` (Ray Data), ``run``
(:func:`run_batch`), ``corpus_dedup`` (near-duplicate pairs across a corpus).
"""

from contextwright.batch.files import BatchStats, read_rows
from contextwright.batch.local import assemble_many
from contextwright.batch.ray import ray_map
from contextwright.batch.rows import BatchReader, BatchRow, BatchSettings, RowAssembler
from contextwright.batch.run import run_batch

__all__ = [
    "BatchReader",
    "BatchRow",
    "BatchSettings",
    "BatchStats",
    "RowAssembler",
    "assemble_many",
    "ray_map",
    "read_rows",
    "run_batch",
]
