"""`ambigdocs answer`: run a model over AmbigDocs in the paper's settings, batched and resumable.

One process:

    ambigdocs answer --model PATH_OR_ID --backend hf --data-dir D --split test \\
        --setting gold-only --batch-size 16 --seed 0 --output runs/answers.jsonl --evaluate

Data parallel over processes, GPUs and nodes (each process answers a shard into
`OUTPUT.part<rank>.jsonl`; the main process merges the shards into OUTPUT, in data order, the same
file one process writes):

    accelerate launch --num_processes 8 -m generation.answering.answer --model ... --output runs/a.jsonl

Output: JSONL, one line per example: the row's fields (without `retrieved`), `docs` (the shown
documents in prompt order: `pid`, `title`, `text`), `gen_answer`, `setting`, `model`, `seed`,
`prompt_format`, `few_shot`, `num_new_tokens`. `ambigdocs evaluate` reads it; `--export-json`
also writes the authors' results JSON (a JSON list of the same rows).

Resuming: lines are flushed and fsynced chunk by chunk; the same command again skips finished
qids (a SIGKILL loses at most the chunk in flight: `--batch-size` prompts for hf, at least the
request concurrency for openai, at least 256 for vllm; see `chunk_size`). The arguments that
decide the answers (and the `--base-url` and answer-changing `--backend-option` values) are
kept in the sidecar `OUTPUT.meta.json`; a run whose arguments differ is refused (use
`--overwrite` to start again). `--limit` and `--batch-size` are not among them: a larger limit
extends a run, and the batch size does not change greedy answers.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from generation.backends.base import parse_backend_options
from generation.documents import (
    DEFAULT_NUM_DOCS,
    SETTINGS,
    as_document_list,
    select_documents,
)
from generation.io.records import ResumableJsonl, atomic_write_json, atomic_write_jsonl, iter_jsonl
from generation.prompts import render_answer_prompt

META_VERSION = 1
VLLM_MIN_CHUNK = 256  # prompts per vLLM call at least (it schedules its own batches)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ambigdocs answer",
        description="Answer AmbigDocs questions with a model (paper Section 5, Figures 11-12).",
    )
    p.add_argument("--model", required=True, help="local folder, Hub id, or API model name")
    p.add_argument("--backend", choices=["hf", "vllm", "openai"], default="hf")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--data-dir", help="folder with the release's raw files (test.json, ...)")
    src.add_argument("--config", choices=["sample"], help="`sample`: the paper's examples")
    src.add_argument(
        "--dataset", help="a JSON/JSONL file of rows, a saved dataset folder, or a Hub dataset id"
    )
    p.add_argument("--split", default="test")
    p.add_argument("--setting", choices=SETTINGS, default="gold-only")
    p.add_argument(
        "--retrieved",
        help="`ambigdocs retrieve` output (its folder or SPLIT.jsonl) for the retrieved settings",
    )
    p.add_argument("--num-docs", type=int, default=DEFAULT_NUM_DOCS, help="documents shown (5)")
    p.add_argument("--few-shot", action="store_true", help="Figure 12 prompt (with exemplar)")
    p.add_argument("--exemplars", help="JSON/JSONL exemplars (question, docs, answer) for few-shot")
    p.add_argument("--limit", type=int, help="answer only the first N examples")
    p.add_argument("--seed", type=int, default=0, help="seeds document sampling and shuffling")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=300)
    p.add_argument(
        "--prompt-format",
        choices=["chat", "plain"],
        help="default: chat when the model has a chat template (always for openai), else plain",
    )
    p.add_argument("--output", required=True, help="the answers, JSONL")
    p.add_argument("--overwrite", action="store_true", help="discard an existing output")
    p.add_argument("--export-json", help="also write the authors' results JSON (a JSON list)")
    p.add_argument("--evaluate", action="store_true", help="score the output at the end")
    p.add_argument("--evaluate-dir", help="where --evaluate writes (default OUTPUT_STEM.eval/)")
    p.add_argument(
        "--evaluate-args",
        default="",
        help='more `ambigdocs evaluate` arguments for --evaluate, one string: --evaluate-args="--no-df1"',
    )
    b = p.add_argument_group("back-end options")
    b.add_argument("--adapter", help="hf/vllm: a PEFT (LoRA) adapter folder")
    b.add_argument("--dtype", default="auto", help="hf/vllm: auto, float32, float16, bfloat16")
    b.add_argument("--base-url", help="openai: an OpenAI-compatible server")
    b.add_argument("--max-concurrency", type=int, help="openai: requests in flight at once")
    b.add_argument(
        "--backend-option",
        "--backend-arg",
        dest="backend_option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any other back-end option (VALUE read as a YAML scalar), repeatable",
    )
    return p


# --- data ---------------------------------------------------------------------------------------


def load_rows(args: argparse.Namespace) -> list[dict]:
    """The split's rows as plain dicts, in data order, validated.

    Raises:
        ValueError: a row lacks `qid`/`question`/`documents`, or qids repeat.
    """
    if args.data_dir or args.config:
        from ambigdocs import load_ambigdocs

        if args.data_dir and not Path(args.data_dir).is_dir():
            raise ValueError(f"--data-dir {args.data_dir}: not a folder")
        ds = load_ambigdocs(args.split, config=args.config or "default", data_dir=args.data_dir)
        rows = [dict(r) for r in ds]
    elif Path(args.dataset).is_file():
        from generation.io.records import read_records

        rows = read_records(args.dataset)
    else:
        import datasets

        if Path(args.dataset).is_dir() and (Path(args.dataset) / "dataset_info.json").exists():
            ds = datasets.load_from_disk(args.dataset)
            ds = ds[args.split] if isinstance(ds, datasets.DatasetDict) else ds
        else:
            ds = datasets.load_dataset(args.dataset, split=args.split)
        rows = [dict(r) for r in ds]
    seen = set()
    for i, row in enumerate(rows):
        for field in ("qid", "question", "documents"):
            if row.get(field) is None:
                raise ValueError(f"example {i}: missing field {field!r}")
        if not isinstance(row["question"], str) or not row["question"].strip():
            raise ValueError(f"example {i} (qid={row['qid']!r}): field 'question' is empty")
        if row["qid"] in seen:
            raise ValueError(f"example {i}: field 'qid' repeats qid={row['qid']!r}")
        seen.add(row["qid"])
    if args.retrieved:
        attach_retrieved(rows, args.retrieved, args.split)
    if args.limit is not None:
        if args.limit < 0:
            raise ValueError(f"--limit must be >= 0, got {args.limit}")
        rows = rows[: args.limit]
    return rows


def load_split_rows(
    split: str,
    *,
    data_dir: str | None = None,
    config: str | None = None,
    dataset: str | None = None,
    limit: int | None = None,
) -> list[dict]:
    """`load_rows` with explicit parameters (used by `ambigdocs retrieve`); no retrieved file."""
    source = argparse.Namespace(
        data_dir=data_dir, config=config, dataset=dataset, split=split, limit=limit, retrieved=None
    )
    return load_rows(source)


def attach_retrieved(rows: list[dict], path: str, split: str) -> None:
    """Adds `retrieved` (by qid) from `ambigdocs retrieve` output: a folder or a JSONL file."""
    path = Path(path)
    if path.is_dir():
        path = path / f"{split}.jsonl"
    by_qid = {str(r["qid"]): r.get("retrieved") for r in iter_jsonl(path)}
    for row in rows:
        if str(row["qid"]) in by_qid:
            row["retrieved"] = by_qid[str(row["qid"])]


def data_source(args: argparse.Namespace) -> str:
    """A description of the input for the run's meta file."""
    if args.data_dir:
        return f"data_dir:{Path(args.data_dir).resolve()}"
    if args.config:
        return f"config:{args.config}"
    ds = Path(args.dataset)
    return f"dataset:{ds.resolve() if ds.exists() else args.dataset}"


# --- output and resume --------------------------------------------------------------------------


def meta_path(output: Path) -> Path:
    return output.with_name(output.name + ".meta.json")


def part_path(output: Path, rank: int) -> Path:
    return output.with_name(f"{output.name}.part{rank}.jsonl")


def existing_parts(output: Path) -> list[Path]:
    return sorted(output.parent.glob(f"{output.name}.part*.jsonl"))


# Back-end options that do not change the answers (speed, retries, progress), or that must never
# be written to disk (credentials): left out of the meta file and of the resume check.
NON_ANSWER_OPTIONS = frozenset(
    {
        "api_key",
        "max_concurrency",
        "max_retries",
        "backoff_base",
        "backoff_max",
        "batch_size",
        "show_progress",
        "timeout",
        "gpu_memory_utilization",
    }
)
SECRET_WORDS = ("secret", "password", "credential")


def looks_secret(key: str) -> bool:
    """Whether an option name looks like a credential (`api_key`, `hf_token`, `*secret*`, ...)."""
    key = key.lower()
    return key.endswith(("key", "token")) or any(word in key for word in SECRET_WORDS)


def answer_options(args: argparse.Namespace) -> dict:
    """The `--backend-option` values that may change the answers, JSON-safe and sorted.

    Keys in `NON_ANSWER_OPTIONS`, `device` (where the model runs) and keys that look like
    credentials (`looks_secret`) are left out.
    """
    options = parse_backend_options(args.backend_option)
    kept = {}
    for key in sorted(options):
        if key in NON_ANSWER_OPTIONS or key == "device":
            continue
        if looks_secret(key):
            continue
        kept[key] = options[key]
    # YAML scalars may be dates etc.: store what JSON round-trips, so old == new compares.
    return json.loads(json.dumps(kept, default=str))


def run_meta(args: argparse.Namespace, prompt_format: str) -> dict:
    """The arguments that decide the answers (what must match to resume)."""
    exemplars = None
    if args.exemplars:
        exemplars = str(Path(args.exemplars).resolve())
    return {
        "meta_version": META_VERSION,
        "model": args.model,
        "backend": args.backend,
        "adapter": args.adapter,
        "data": data_source(args),
        "split": args.split,
        "setting": args.setting,
        "retrieved": str(Path(args.retrieved).resolve()) if args.retrieved else None,
        "num_docs": args.num_docs,
        "few_shot": args.few_shot,
        "exemplars": exemplars,
        "seed": args.seed,
        "max_new_tokens": args.max_new_tokens,
        "prompt_format": prompt_format,
        "dtype": args.dtype,
        "base_url": args.base_url if args.backend == "openai" else None,
        "backend_options": answer_options(args),
    }


# Meta keys added after META_VERSION 1 and their value in files written before them.
META_DEFAULTS = {"base_url": None, "backend_options": {}}


def check_meta(output: Path, meta: dict) -> bool:
    """Whether `output` (and its shards) may be resumed with `meta`; False when nothing exists.

    Raises:
        ValueError: an existing output whose meta file is missing or differs.
    """
    have_output = (output.exists() and output.stat().st_size > 0) or bool(existing_parts(output))
    mpath = meta_path(output)
    if not have_output:
        return False
    if not mpath.exists():
        raise ValueError(
            f"{output} exists but has no {mpath.name}: it was not written by this command with "
            "these arguments; choose another --output or pass --overwrite"
        )
    old = json.loads(mpath.read_text(encoding="utf-8"))
    diff = {
        k: (old.get(k, META_DEFAULTS.get(k)), v)
        for k, v in meta.items()
        if old.get(k, META_DEFAULTS.get(k)) != v
    }
    if diff:
        lines = ", ".join(f"{k}: {a!r} (existing) vs {b!r} (now)" for k, (a, b) in diff.items())
        raise ValueError(
            f"{output} was made with different arguments ({lines}); choose another --output "
            "or pass --overwrite"
        )
    return True


def discard_output(output: Path) -> None:
    for path in [output, meta_path(output), *existing_parts(output)]:
        path.unlink(missing_ok=True)


def read_done(output: Path) -> list[dict]:
    """The finished rows in OUTPUT and all its shards (first occurrence of a qid wins)."""
    rows, seen = [], set()
    for path in [output, *existing_parts(output)]:
        if path.exists():
            for row in iter_jsonl(path):
                if row["qid"] not in seen:
                    seen.add(row["qid"])
                    rows.append(row)
    return rows


def merge_output(output: Path, order: Sequence) -> int:
    """Rewrites OUTPUT atomically with all finished rows in data order, then drops the shards.

    Rows of qids not in `order` (e.g. a later run with a smaller --limit) keep their place
    after the others. Returns the number of rows.
    """
    rows = read_done(output)
    rank = {qid: i for i, qid in enumerate(order)}
    rows.sort(key=lambda r: rank.get(r["qid"], len(rank)))
    atomic_write_jsonl(output, rows)
    for path in existing_parts(output):
        path.unlink()
    return len(rows)


# --- the run ------------------------------------------------------------------------------------


def backend_options(args: argparse.Namespace, device: str | None) -> dict:
    """Keyword options for `load_backend`, from the flags that apply to the chosen back-end."""
    opts: dict = {}
    if args.backend in ("hf", "vllm"):
        opts["dtype"] = args.dtype
        if args.adapter:
            opts["adapter"] = args.adapter
    if args.backend == "hf":
        opts["batch_size"] = args.batch_size
        if device:
            opts["device"] = device
    if args.backend == "openai":
        if args.base_url:
            opts["base_url"] = args.base_url
        if args.max_concurrency:
            opts["max_concurrency"] = args.max_concurrency
    opts.update(parse_backend_options(args.backend_option))
    return opts


def check_process_layout(backend: str, num_processes: int) -> None:
    """Refuses layouts that cannot work.

    Raises:
        ValueError: `vllm` under accelerate with more than one process: every process's engine
            would claim GPU 0; vLLM spreads one model over GPUs itself.
    """
    if backend == "vllm" and num_processes > 1:
        raise ValueError(
            f"--backend vllm does not run under accelerate with {num_processes} processes (every "
            "process's vLLM engine would start on GPU 0); launch one process and pass "
            f"--backend-option tensor_parallel_size={num_processes} to use {num_processes} GPUs"
        )


def load_exemplars(path: str) -> list[dict]:
    """Few-shot exemplars from a JSON/JSONL file, validated; `docs` as a list of dicts.

    Raises:
        ValueError: no exemplars, or an exemplar without a string `question`/`answer` or with
            `docs` that are not a list of documents with string `title` and `text` (the message
            names the exemplar index and the field).
    """
    from generation.io.records import read_records

    records = read_records(path)
    if not records:
        raise ValueError(f"--exemplars {path}: no exemplars")
    exemplars = []
    for i, ex in enumerate(records):
        where = f"--exemplars {path}: exemplar {i}"
        if not isinstance(ex, dict):
            raise ValueError(f"{where} is not an object")
        for field in ("question", "answer"):
            if not isinstance(ex.get(field), str):
                raise ValueError(f"{where}: field {field!r} must be a string")
        if ex.get("docs") is None:
            raise ValueError(f"{where}: missing field 'docs'")
        docs = as_document_list(ex["docs"], where=where, field="docs")
        exemplars.append({**ex, "docs": docs})
    return exemplars


def chunk_size(args: argparse.Namespace) -> int:
    """How many prompts the runner hands the back-end at once (and writes out together).

    hf: `--batch-size` (its own batch). openai: at least the concurrency limit, else fewer
    requests than allowed would be in flight. vllm: at least 256, so that its continuous
    batching has work to schedule. A chunk is also the most finished work a crash can lose.
    """
    if args.backend == "openai":
        from generation.backends.openai import DEFAULT_MAX_CONCURRENCY

        options = parse_backend_options(args.backend_option)
        concurrency = options.get("max_concurrency", args.max_concurrency)
        return max(args.batch_size, int(concurrency or DEFAULT_MAX_CONCURRENCY))
    if args.backend == "vllm":
        return max(args.batch_size, VLLM_MIN_CHUNK)
    return args.batch_size


def default_prompt_format(backend) -> str:
    """`chat` when the back-end can render chat messages, else `plain`."""
    return "chat" if getattr(backend, "has_chat_template", False) else "plain"


def _state():
    """accelerate's PartialState (one process when not launched by accelerate).

    Without CUDA, accelerate only forms a process group (gloo) when asked for CPU explicitly;
    otherwise every launched process would think it is alone and answer everything.
    """
    import torch
    from accelerate import PartialState

    use_cpu = os.environ.get("ACCELERATE_USE_CPU", "").lower() in ("1", "true", "yes")
    return PartialState(cpu=use_cpu or not torch.cuda.is_available())


def run(args: argparse.Namespace) -> int:
    """Answers the split; returns the exit status."""
    from tqdm.auto import tqdm

    from generation.backends.base import load_backend

    if args.batch_size < 1:
        raise ValueError(f"--batch-size must be >= 1, got {args.batch_size}")
    output = Path(args.output)
    state = _state()
    check_process_layout(args.backend, state.num_processes)
    if args.overwrite and state.is_main_process:
        discard_output(output)
    state.wait_for_everyone()
    rows = load_rows(args)
    exemplars = load_exemplars(args.exemplars) if args.exemplars else None

    # Documents are fixed per example before anything else (and bad rows fail before the model
    # loads): batches and processes only change speed.
    shown = {
        r["qid"]: select_documents(r, args.setting, args.seed, num_docs=args.num_docs) for r in rows
    }

    device = None
    if args.backend == "hf" and state.num_processes > 1:
        device = str(state.device)  # one model per process, each on its own device
    backend = load_backend(args.backend, args.model, **backend_options(args, device))
    prompt_format = args.prompt_format or default_prompt_format(backend)
    meta = run_meta(args, prompt_format)
    resuming = check_meta(output, meta)  # every process checks; the main one writes
    if state.is_main_process:
        output.parent.mkdir(parents=True, exist_ok=True)
        if not resuming:
            atomic_write_json(meta_path(output), meta)
        # Cut torn last lines left by a killed run before anyone reads the files.
        for path in [output, *existing_parts(output)]:
            if path.exists():
                ResumableJsonl(path, key=lambda r: r["qid"]).close()
    state.wait_for_everyone()

    done = {r["qid"] for r in read_done(output)}
    state.wait_for_everyone()  # all have read before anyone appends
    todo = [r for r in rows if r["qid"] not in done]
    if state.num_processes > 1:
        with state.split_between_processes(todo) as shard:
            todo = list(shard)
        target = part_path(output, state.process_index)
    else:
        target = output

    jobs = []
    for row in todo:
        docs = shown[row["qid"]]
        prompt = render_answer_prompt(
            row["question"],
            docs,
            few_shot=args.few_shot,
            prompt_format=prompt_format,
            exemplars=exemplars,
        )
        jobs.append((row, docs, prompt))
    # Similar lengths together: little padding. Stable, so the run is deterministic.
    jobs.sort(key=lambda j: -len(json.dumps(j[2])))

    started, new_tokens = time.perf_counter(), 0
    bar = tqdm(
        total=len(jobs),
        unit="ex",
        desc=f"answer[{state.process_index}]" if state.num_processes > 1 else "answer",
        disable=not state.is_local_main_process,
        dynamic_ncols=True,
    )
    with ResumableJsonl(target, key=lambda r: r["qid"]) as out:
        chunk = chunk_size(args)
        for start in range(0, len(jobs), chunk):
            batch = jobs[start : start + chunk]
            gens = backend.generate([j[2] for j in batch], max_new_tokens=args.max_new_tokens)
            records = []
            for (row, docs, _), gen in zip(batch, gens, strict=True):
                record = {k: v for k, v in row.items() if k != "retrieved"}
                record.update(
                    docs=docs,
                    gen_answer=gen.text.strip(),
                    setting=args.setting,
                    model=args.model,
                    seed=args.seed,
                    prompt_format=prompt_format,
                    few_shot=args.few_shot,
                    num_new_tokens=gen.num_tokens,
                )
                records.append(record)
                new_tokens += gen.num_tokens or 0
            out.append(records)
            bar.update(len(batch))
    bar.close()
    elapsed = time.perf_counter() - started
    backend.close()

    state.wait_for_everyone()
    if not state.is_main_process:
        return 0
    total = merge_output(output, [r["qid"] for r in rows])
    rate = len(jobs) / elapsed if elapsed > 0 and jobs else 0.0
    print(
        f"answered {len(jobs)} new examples in {elapsed:.1f}s on process 0 "
        f"({rate:.2f} examples/s, {new_tokens / elapsed if elapsed > 0 else 0:.1f} new tokens/s); "
        f"{total} rows in {output}",
        file=sys.stderr,
    )
    if args.export_json:
        atomic_write_json(args.export_json, list(iter_jsonl(output)))
        print(f"wrote the results JSON {args.export_json}", file=sys.stderr)
    if args.evaluate:
        from generation.report.evaluate import main as evaluate_main

        eval_dir = args.evaluate_dir or str(output.with_suffix("")) + ".eval"
        extra = shlex.split(args.evaluate_args)
        return int(evaluate_main([str(output), "--output-dir", eval_dir, *extra]) or 0)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of `ambigdocs answer` and `accelerate launch -m generation.answering.answer`."""
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except ValueError as err:
        print(f"ambigdocs answer: error: {err}", file=sys.stderr)
        return 2
    except RuntimeError as err:  # e.g. an API request that failed for good
        print(
            f"ambigdocs answer: error: {err}\nThe finished answers are kept in {args.output}; "
            "run the same command again to resume.",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
