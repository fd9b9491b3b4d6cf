"""Layer 5, inputs: what comes in from outside, before any stage sees it.

``readers`` (JSON, JSON Lines and Parquet files, checked and bounded),
``frameworks`` (LangChain, LlamaIndex and Haystack objects read by shape,
without importing a framework).
"""
