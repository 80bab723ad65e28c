"""wflang: a typed workflow language and its toolchain.

The stages are sub-packages and data flows one way through them:
``grammar`` (the .lark file) -> ``dsl`` (source to typed spec) -> ``compiler``
(checks, diff, tables, diagrams) -> ``runtime`` (step function, engine, stores).
"""

__version__ = "0.1.0"
