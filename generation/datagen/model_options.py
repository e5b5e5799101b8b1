"""The model options of the stages that call a model (`questions`, `expand`): one definition of
the flags and of the back-end they describe."""

from __future__ import annotations

import argparse

from generation.backends.base import BACKENDS, LazyBackend, parse_backend_options


def add_model_options(p: argparse.ArgumentParser, model_help: str, adapter_help: str) -> None:
    """Adds `--backend`, `--model`, `--adapter`, `--batch-size` and `--backend-option`."""
    p.add_argument("--backend", choices=sorted(BACKENDS), required=True, help="model back-end")
    p.add_argument("--model", required=True, help=model_help)
    p.add_argument("--adapter", help=adapter_help)
    p.add_argument("--batch-size", type=int, help="back-end batch size (hf, vllm)")
    p.add_argument(
        "--backend-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra back-end option, e.g. dtype=bfloat16 or base_url=...; repeatable",
    )


def backend_from_args(args: argparse.Namespace) -> LazyBackend:
    """The back-end the options name, loaded on first use: a stage checks its input first, and
    a resume with nothing left to do loads no model."""
    options = parse_backend_options(args.backend_option)
    if args.batch_size is not None:
        options["batch_size"] = args.batch_size
    if args.adapter:
        options["adapter"] = args.adapter
    return LazyBackend(args.backend, args.model, **options)


def model_settings(args: argparse.Namespace) -> dict:
    """The model options that decide a stage's outputs (checked when a run resumes)."""
    return {"backend": args.backend, "model": args.model, "adapter": args.adapter}
