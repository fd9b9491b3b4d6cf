"""Layer 9, assembly: stages, a tokenizer and a budget made into one call.

``pipeline`` (the stage loop, sync and async, and the final render),
``assembler`` (:class:`Assembler`: a reusable pipeline with its tokenizer,
caches and resources), ``presets`` (named pipelines and their config form),
``spec`` (flat options, as the CLI, the service and the adapters take them,
to an assembler).
"""
