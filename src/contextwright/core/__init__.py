"""Layer 1, core: what every other layer uses and nothing domain-specific.

``errors`` (the exception hierarchy), ``limits`` (bounds on work and size),
``telemetry`` (logging and spans), ``text`` (valid Unicode and what a reader
cannot see), ``sentences`` (the sentence splitter). Imports nothing else of
contextwright.
"""
