"""AmbigDocs toolkit: the `ambigdocs` command line and the code behind each of its jobs.

Heavy libraries (torch, transformers, datasets, vllm, openai) are imported inside the module or
function that needs them, so that light jobs such as `ambigdocs evaluate` start instantly.
"""

__version__ = "0.1.0"
