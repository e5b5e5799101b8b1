"""Model back-ends behind one small interface (see `base.py`).

`load_backend("hf" | "vllm" | "openai", model, **options)` imports only the chosen back-end, so
torch, vllm or openai are loaded only by the jobs that use them.
"""

from generation.backends.base import Backend, Generation, load_backend

__all__ = ["Backend", "Generation", "load_backend"]
