"""`ambigdocs answer`: run a model over AmbigDocs in the paper's settings, batched and resumable.

    ambigdocs answer --model PATH_OR_ID --backend hf --data-dir D --split test \\
        --setting gold-only --batch-size 16 --seed 0 --output runs/answers.jsonl --evaluate
    accelerate launch --num_processes 8 -m generation.answering.answer --model ... --output ...

A run is five steps: `prepare` (everything checked before a model loads), `resume`, `generate`,
`merge` and `report`; `--dry-run` stops after `prepare` (`dry_run.py`). The output, resuming
and data parallelism: docs/answering.md.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from generation import secrets
from generation.answering.data import data_source, load_exemplars, read_rows
from generation.answering.options import AnswerArguments, parse_answer_args
from generation.answering.output import (
    discard_output,
    has_work,
    merge_output,
    meta_path,
    part_path,
    read_done,
    repair,
    write_results_json,
)
from generation.backends.base import check_backend_options, parse_backend_options, result_options
from generation.backends.openai import (
    DEFAULT_MAX_CONCURRENCY,
    decoding_options,
    resolve_decoding,
)
from generation.boundary import guard, one_line
from generation.documents import select_documents
from generation.extras import require
from generation.io.outputs import output_lock, refuse_unsafe_output
from generation.io.records import ResumableJsonl
from generation.io.resume import (
    check_kept_rows,
    check_settings,
    chunks,
    file_fingerprint,
    records_digest,
)
from generation.prompts import render_answer_input

__all__ = ["load_exemplars", "main", "parse_answer_args", "run"]

META_VERSION = 1
VLLM_MIN_CHUNK = 256  # prompts per vLLM call at least (it schedules its own batches)


# --- settings -----------------------------------------------------------------------------------

# Settings added after META_VERSION 1 and their value in files written before them. The input
# fingerprints have no such value: an output from before them cannot be resumed.
META_DEFAULTS = {"base_url": None, "backend_options": {}, "decoding": "greedy"}


def local_fingerprint(path: str | None) -> str | None:
    """The fingerprint of a local file or folder (model, adapter, exemplars); None otherwise."""
    if path and Path(path).expanduser().exists():
        return file_fingerprint(Path(path).expanduser())
    return None


def run_meta(args: AnswerArguments, prompt_format: str, decoding: str = "greedy") -> dict:
    """The settings that decide the answers (what must match to resume), inputs excluded."""
    return {
        "meta_version": META_VERSION,
        "model": args.model,
        "backend": args.backend,
        "adapter": args.adapter,
        "data": data_source(args.data_dir, args.config, args.dataset),
        "split": args.split,
        "setting": args.setting,
        "retrieved": str(Path(args.retrieved).resolve()) if args.retrieved else None,
        "num_docs": args.num_docs,
        "few_shot": args.few_shot,
        "exemplars": str(Path(args.exemplars).resolve()) if args.exemplars else None,
        "seed": args.seed,
        "max_new_tokens": args.max_new_tokens,
        "prompt_format": prompt_format,
        "decoding": decoding,
        "dtype": args.dtype,
        "base_url": secrets.strip_url(args.base_url) if args.backend == "openai" else None,
        "backend_options": result_options(parse_backend_options(args.backend_option)),
    }


def input_fingerprints(args: AnswerArguments, all_rows: list[dict]) -> dict:
    """Content fingerprints of the inputs: a resume on changed inputs must not keep old work.

    `data_rows` covers every row of the split (with its retrieved passages) before `--limit`,
    so that a larger `--limit` still extends a run while an edited question is noticed.
    """
    return {
        "data_rows": records_digest(all_rows),
        "model_files": local_fingerprint(args.model) if args.backend != "openai" else None,
        "adapter_files": local_fingerprint(args.adapter),
        "exemplars_file": local_fingerprint(args.exemplars),
    }


# --- step 1: prepare ----------------------------------------------------------------------------


@dataclass
class Plan:
    """What a run will do, fixed before any model loads."""

    rows: list[dict]  # the rows to answer, in data order
    shown: dict  # qid -> the shown documents, in prompt order
    prompts: dict  # qid -> the prompt the back-end receives
    prompt_format: str
    decoding: str
    settings: dict  # run_meta + input fingerprints
    tokenizer: object | None = None  # loaded only to render or choose chat prompts
    qids: frozenset = frozenset()  # every qid of the data (before --limit)


def check_model_path(args: AnswerArguments) -> None:
    """A local `--model`/`--adapter` that is missing, or a `--model` that is a file, is an error
    (ValueError) before anything loads; which names count as local: docs/answering.md,
    "Back-ends"."""
    if args.backend != "openai":
        model = Path(args.model).expanduser()
        looks_local = model.is_absolute() or args.model.startswith((".", "~"))
        looks_local = looks_local or args.model.count("/") > 1 or "\\" in args.model
        if model.exists() and not model.is_dir():
            raise ValueError(f"--model {args.model}: is a file, not a model folder")
        if looks_local and not model.exists():
            raise ValueError(f"--model {args.model}: no such folder")
    if args.adapter and not Path(args.adapter).expanduser().is_dir():
        raise ValueError(f"--adapter {args.adapter}: no such folder")


def resolve_prompt_format(args: AnswerArguments) -> tuple[str, object | None]:
    """The prompt format (given, or `chat` when the model has a chat template, always for
    openai, else `plain`) and the tokenizer when one was needed to decide or to render (a
    ValueError in one line when it cannot be loaded)."""
    from generation.answering.dry_run import load_tokenizer

    if args.backend == "openai":
        return args.prompt_format or "chat", None
    needs_tokenizer = args.prompt_format is None or (args.dry_run and args.prompt_format == "chat")
    if not needs_tokenizer:
        return args.prompt_format, None
    options = parse_backend_options(args.backend_option)
    why = "--prompt-format chat" if args.prompt_format else "choosing the prompt format"
    tokenizer = load_tokenizer(
        options.get("tokenizer") or args.model,
        trust_remote_code=bool(options.get("trust_remote_code")),
        why=why,
    )
    if args.prompt_format:
        return args.prompt_format, tokenizer
    from generation.backends.hf import tokenizer_has_chat_template

    return ("chat" if tokenizer_has_chat_template(tokenizer) else "plain"), tokenizer


def prepare(args: AnswerArguments) -> Plan:
    """Step 1: checks the options, reads the rows, fixes each example's documents and prompt,
    and computes the run's settings: bad input fails here (ValueError), before a model loads."""
    args.check()
    check_model_path(args)
    check_backend_options(args.backend, backend_options(args, device=None))
    all_rows = read_rows(
        data_dir=args.data_dir, config=args.config, dataset=args.dataset,
        split=args.split, retrieved=args.retrieved,
    )  # fmt: skip
    rows = all_rows if args.limit is None else all_rows[: args.limit]
    exemplars = load_exemplars(args.exemplars) if args.exemplars else None
    # Documents are fixed per example first: batches and processes only change speed.
    shown = {
        r["qid"]: select_documents(r, args.setting, args.seed, num_docs=args.num_docs) for r in rows
    }
    prompt_format, tokenizer = resolve_prompt_format(args)
    prompts = {
        r["qid"]: render_answer_input(
            r["question"],
            shown[r["qid"]],
            prompt_format=prompt_format,
            few_shot=args.few_shot,
            backend_kind=args.backend,
            exemplars=exemplars,
        )
        for r in rows
    }
    decoding = resolve_decoding(args.backend, prompt_format, args.decoding)
    settings = {**run_meta(args, prompt_format, decoding), **input_fingerprints(args, all_rows)}
    qids = frozenset(r["qid"] for r in all_rows)
    return Plan(rows, shown, prompts, prompt_format, decoding, settings, tokenizer, qids)


# --- step 2: resume -----------------------------------------------------------------------------


def row_settings(args: AnswerArguments, plan: Plan) -> dict:
    """The settings each output row records itself, as this run records them."""
    return {
        "setting": args.setting,
        "model": args.model,
        "seed": args.seed,
        "prompt_format": plan.prompt_format,
        "few_shot": args.few_shot,
        "decoding": plan.decoding,
    }


def resume(args: AnswerArguments, plan: Plan, state) -> tuple[list[dict], Path]:
    """Step 2: refuses an output made with other settings or inputs (ResumeRefused) or holding
    lines that are not answer rows (ValueError), repairs torn lines, and returns this process's
    share of the unfinished examples and the file it appends to."""
    output = Path(args.output)
    # Every process checks (and writes the same settings); all have looked before anyone writes.
    work = has_work(output)
    state.wait_for_everyone()
    check_settings(
        meta_path(output), plan.settings, has_work=work, what=str(output), defaults=META_DEFAULTS
    )
    if state.is_main_process:
        repair(output)  # before anyone reads the files
    state.wait_for_everyone()
    kept = read_done(output)
    # Every kept row is the run's own (answered again otherwise would hide a mixed file).
    run = {"model": args.model, **row_settings(args, plan)}  # the model is checked first
    check_kept_rows(kept, run, plan.qids, key="qid", what=str(output))
    done = {r["qid"] for r in kept}
    state.wait_for_everyone()  # all have read before anyone appends
    todo = [r for r in plan.rows if r["qid"] not in done]
    if state.num_processes == 1:
        return todo, output
    with state.split_between_processes(todo) as shard:
        return list(shard), part_path(output, state.process_index)


# --- step 3: generate ---------------------------------------------------------------------------


def backend_options(args: AnswerArguments, device: str | None) -> dict:
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
        # authors: the script set neither temperature nor a token limit (the API's defaults).
        decoding = resolve_decoding(args.backend, args.prompt_format or "chat", args.decoding)
        opts.update(decoding_options(decoding))
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


def chunk_size(args: AnswerArguments) -> int:
    """How many prompts the runner hands the back-end at once (and writes out together, the most
    finished work a crash can lose): hf `--batch-size`; openai at least the concurrency limit, vllm
    at least 256, so that neither runs with less work in flight than it could schedule."""
    if args.backend == "openai":
        options = parse_backend_options(args.backend_option)
        concurrency = options.get("max_concurrency", args.max_concurrency)
        return max(args.batch_size, int(concurrency or DEFAULT_MAX_CONCURRENCY))
    if args.backend == "vllm":
        return max(args.batch_size, VLLM_MIN_CHUNK)
    return args.batch_size


def output_record(args: AnswerArguments, plan: Plan, row: dict, gen) -> dict:
    """One output line: the row (without `retrieved`), its documents, the answer, the settings."""
    record = {k: v for k, v in row.items() if k != "retrieved"}
    record.update(
        docs=plan.shown[row["qid"]],
        gen_answer=gen.text.strip(),
        **row_settings(args, plan),
        num_new_tokens=gen.num_tokens,
    )
    return record


def generate(args: AnswerArguments, plan: Plan, backend, todo: list[dict], target: Path, state):
    """Step 3: answers `todo` chunk by chunk, appending each finished chunk durably to `target`.

    Returns:
        (examples answered, new tokens, seconds).
    """
    from tqdm.auto import tqdm

    # Similar lengths together: little padding. Stable, so the run is deterministic.
    jobs = sorted(todo, key=lambda r: -len(json.dumps(plan.prompts[r["qid"]])))
    started, new_tokens = time.perf_counter(), 0
    bar = tqdm(
        total=len(jobs),
        unit="ex",
        desc=f"answer[{state.process_index}]" if state.num_processes > 1 else "answer",
        disable=not state.is_local_main_process,
        dynamic_ncols=True,
    )
    with ResumableJsonl(target, key=lambda r: r.get("qid")) as out:
        for batch in chunks(jobs, chunk_size(args)):
            prompts = [plan.prompts[r["qid"]] for r in batch]
            gens = backend.generate(prompts, max_new_tokens=args.max_new_tokens)
            out.append(output_record(args, plan, r, g) for r, g in zip(batch, gens, strict=True))
            new_tokens += sum(g.num_tokens or 0 for g in gens)
            bar.update(len(batch))
    bar.close()
    return len(jobs), new_tokens, time.perf_counter() - started


# --- steps 4 and 5: merge and report ------------------------------------------------------------


def report(args: AnswerArguments, answered: int, new_tokens: int, elapsed: float, total: int):
    """Step 5: prints the speed, writes the results JSON, runs the scorer; returns the status."""
    output = Path(args.output)
    rate = answered / elapsed if elapsed > 0 and answered else 0.0
    print(
        f"answered {answered} new examples in {elapsed:.1f}s on process 0 "
        f"({rate:.2f} examples/s, {new_tokens / elapsed if elapsed > 0 else 0:.1f} new tokens/s); "
        f"{total} rows in {output}",
        file=sys.stderr,
    )
    if args.export_json:
        write_results_json(output, args.export_json)
        print(f"wrote the results JSON {args.export_json}", file=sys.stderr)
    if not args.evaluate:
        return 0
    from generation.report.evaluate import main as evaluate_main

    eval_dir = args.evaluate_dir or str(output.with_suffix("")) + ".eval"
    extra = shlex.split(args.evaluate_args)
    return int(evaluate_main([str(output), "--output-dir", eval_dir, *extra]) or 0)


# --- the run ------------------------------------------------------------------------------------


def process_state(timeout=None):
    """accelerate's PartialState: rank, world size, device (one process when not launched by
    accelerate); `timeout` bounds the waits for the other processes (accelerate's default: None).

    Without CUDA, accelerate only forms a process group (gloo) when asked for CPU explicitly;
    otherwise every launched process would think it is alone and do all the work.
    """
    import torch
    from accelerate import PartialState

    use_cpu = os.environ.get("ACCELERATE_USE_CPU", "").lower() in ("1", "true", "yes")
    kwargs = {} if timeout is None else {"timeout": timeout}
    return PartialState(cpu=use_cpu or not torch.cuda.is_available(), **kwargs)


def write_dry_run(args: AnswerArguments, plan: Plan) -> int:
    """`--dry-run`: each example's qid, shown documents and exact model input, as JSONL."""
    from generation.answering.dry_run import dry_run_rows
    from generation.io.records import atomic_write_jsonl

    output = Path(args.output)
    if meta_path(output).exists():
        if not args.overwrite:
            raise ValueError(
                f"{output} holds the answers of a run; choose another --output for the dry run "
                "or pass --overwrite"
            )
        discard_output(output)
    extra = {"setting": args.setting, "prompt_format": plan.prompt_format}
    extra.update(few_shot=args.few_shot, backend=args.backend)
    records = dry_run_rows(
        plan.rows, plan.shown, plan.prompts, backend_kind=args.backend,
        tokenizer=plan.tokenizer, model_name=args.model, extra=extra,
    )  # fmt: skip
    atomic_write_jsonl(output, records)
    print(
        f"dry run: wrote the model inputs of {len(records)} examples to {output}", file=sys.stderr
    )
    return 0


def run(args: AnswerArguments) -> int:
    """Answers the split (prepare -> resume -> generate -> merge -> report); the exit status.

    Raises:
        OutputBusy: another run is writing this output.
    """
    output = Path(args.output)
    refuse_unsafe_output(output, f"--output {output}")  # never appended to through a link
    if args.dry_run:
        with output_lock(output, f"--output {output}"):
            return write_dry_run(args, prepare(args))
    require("answer", "torch", "accelerate", what="a model run")  # every back-end
    state = process_state()
    check_process_layout(args.backend, state.num_processes)
    # One run per output: each process locks the file it appends to, so that every process of
    # a second run is refused (none waits for a partner that gave up).
    mine = output if state.is_main_process else part_path(output, state.process_index)
    with output_lock(mine, f"--output {output}"):
        return _answer(args, state)


def _answer(args: AnswerArguments, state) -> int:
    from generation.backends.base import load_backend

    plan = prepare(args)  # bad input fails here, before --overwrite deletes anything
    if args.overwrite and state.is_main_process:
        discard_output(Path(args.output))
    state.wait_for_everyone()
    todo, target = resume(args, plan, state)
    device = str(state.device) if args.backend == "hf" and state.num_processes > 1 else None
    try:
        backend = load_backend(args.backend, args.model, **backend_options(args, device))
    except OSError as err:  # missing files, an unreachable Hub: name what could not be loaded
        raise ValueError(f"--model {args.model}: cannot be loaded ({one_line(err)})") from None
    try:
        answered, new_tokens, elapsed = generate(args, plan, backend, todo, target, state)
    finally:
        backend.close()
    state.wait_for_everyone()
    if not state.is_main_process:
        return 0
    total = merge_output(Path(args.output), [r["qid"] for r in plan.rows])
    return report(args, answered, new_tokens, elapsed, total)


def main(argv: list[str] | None = None) -> int:
    """Entry point of `ambigdocs answer` and `accelerate launch -m generation.answering.answer`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return guard("ambigdocs answer", lambda: run(parse_answer_args(argv)), argv)


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
