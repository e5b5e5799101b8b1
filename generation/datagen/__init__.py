"""Creating AmbigDocs-style data (paper Section 3, docs/pipeline.md): one module per stage.

gather -> seed -> questions -> filter -> expand -> split; `all` runs the chain from a YAML config.
"""
