"""Layer 3, clients: the models contextwright calls, each behind a small protocol.

``chat`` (an OpenAI-compatible chat client), ``embed`` (embedders), ``rerank``
(cross-encoder rerankers). They know nothing of chunks or stages.
"""
