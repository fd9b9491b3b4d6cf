"""Layer 4, model: the data every stage passes on.

``chunk`` (:class:`Chunk`), ``fields`` (reading a chunk's fields from a
mapping), ``convert`` (lists of mappings to chunks), ``report`` (drops,
changes, stage reports), ``zones`` (chat messages, trimmed history, tool
outputs), ``spans`` (where a block's text came from), ``provenance`` (which part of a block a
folded copy holds).
"""
