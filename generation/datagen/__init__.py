"""Creating AmbigDocs-style data (paper Section 3, pipeline.md): one module per stage.

gather -> seed -> questions -> filter -> expand -> split; `all` runs the chain from a YAML config.
"""
