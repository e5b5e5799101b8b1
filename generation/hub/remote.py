"""The few Hugging Face Hub calls `push` and `push-metric` make, in one place, through an
`HfApi`-like object (tests hand in a fake one). The token is whatever `huggingface_hub` finds;
this module never reads, logs or prints it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from huggingface_hub import CommitOperationAdd
from huggingface_hub.errors import (
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

_REPO_PART = re.compile(r"[A-Za-z0-9][\w.-]*")


@dataclass
class RepoState:
    """What a repository holds at one revision, as read before a commit.

    `branch_exists` is False for a new branch: `files` are then those of the default branch,
    which it will start from. `sha`, the commit read, is the commit's parent, so that a
    concurrent change makes the commit fail instead of silently mixing two states.
    """

    exists: bool = False
    branch_exists: bool = False
    sha: str | None = None
    files: list[str] = field(default_factory=list)


def read_repo_state(api: Any, repo_id: str, repo_type: str, revision: str | None) -> RepoState:
    """Whether a repository (and the branch `revision`; None: the default one) exists, and
    which files it has."""
    try:
        info = api.repo_info(repo_id, repo_type=repo_type, revision=revision)
        branch_exists = True
    except RevisionNotFoundError:
        info = api.repo_info(repo_id, repo_type=repo_type)
        branch_exists = False
    except RepositoryNotFoundError:
        return RepoState()
    files = api.list_repo_files(repo_id, repo_type=repo_type, revision=info.sha)
    return RepoState(exists=True, branch_exists=branch_exists, sha=info.sha, files=list(files))


def publish(
    repo_id: str,
    repo_type: str,
    plan: Callable[[RepoState, str | None], tuple[list, str]],
    message: str,
    *,
    verb: str,
    what: str,
    api: Any = None,
    dry_run: bool = False,
    read_card: bool = False,
    private: bool = False,
    revision: str | None = None,
    create_pr: bool = False,
    space_sdk: str | None = None,
    out=None,
):
    """Reads the repository, prints the commit's plan and makes it (unless a dry run): the one
    order of `push` and `push-metric`.

    Args:
        api: an `HfApi`-like object (None: `HfApi()`, with the usual token).
        plan: `plan(state, card_text)` returns the commit's operations and the new README.md.
        verb, what: the plan's headline, `{verb}ing {what} {repo_id}` (`would {verb}` on a
            dry run; `what` ends in "to").
        read_card: read the repository's `README.md` for `plan` (else it gets None).
        private: create the repository private (an existing one keeps its visibility).
        revision: the branch to commit to (created at the commit read if missing).
        create_pr: open a pull request against `revision` (which must exist).
        space_sdk: the SDK of a new Space (`gradio`).

    Returns:
        The `CommitInfo`, or None on a dry run.

    Raises:
        ValueError: `create_pr` against a branch that does not exist (before the plan prints).
        Exception: whatever the Hub client raises when the Hub cannot be reached or refuses
            (on a dry run, the plan for a new repository is printed first).
    """
    from metric.ambigdocs_metric.hub_errors import hub_unreachable

    out = out or sys.stdout
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()

    def show(state: RepoState, card_text: str | None, where: str) -> list:
        operations, readme = plan(state, card_text)
        target = repo_id + (f"@{revision}" if revision else "") + where
        print(f"{'would ' + verb if dry_run else verb + 'ing'} {what} {target}", file=out)
        for op in operations:
            if isinstance(op, CommitOperationAdd):
                src = op.path_or_fileobj
                size = len(src) if isinstance(src, bytes) else Path(src).stat().st_size
                print(f"  + {op.path_in_repo} ({size:,} bytes)", file=out)
            else:
                print(f"  - {op.path_in_repo}", file=out)
        if dry_run:
            print("README.md would be:\n" + readme, file=out)
        return operations

    try:
        state = read_repo_state(api, repo_id, repo_type, revision)
        card_text = None
        if read_card and state.exists and "README.md" in state.files:
            local = api.hf_hub_download(
                repo_id, "README.md", repo_type=repo_type, revision=state.sha
            )
            card_text = Path(local).read_text(encoding="utf-8")
    except Exception as err:
        if dry_run and hub_unreachable(err):
            # Still show what was checked offline: the plan for a new repository.
            kind = "Space" if repo_type == "space" else "repository"
            show(
                RepoState(), None, f" (checked offline, as a new {kind}: the Hub could not be read)"
            )
        raise
    # The Hub would open a PR against the default branch instead, while the report names it.
    if create_pr and revision and not state.branch_exists:
        raise ValueError(
            f"--create-pr needs an existing --revision: branch {revision!r} does not exist "
            "(push to it without --create-pr to create it)"
        )
    operations = show(state, card_text, "" if state.exists else " (new)")
    if dry_run:
        return None
    if not state.exists:
        kwargs = {"space_sdk": space_sdk} if space_sdk else {}
        api.create_repo(repo_id, repo_type=repo_type, private=private, exist_ok=True, **kwargs)
    if revision and not state.branch_exists:
        # Start the branch at the commit that was read, not at whatever the default branch holds
        # now; the commit below is then pinned to it like any other.
        api.create_branch(
            repo_id, repo_type=repo_type, branch=revision, revision=state.sha, exist_ok=True
        )
    info = api.create_commit(
        repo_id,
        operations,
        commit_message=message,
        repo_type=repo_type,
        revision=revision,
        create_pr=create_pr,
        # Pinned to the commit read (a concurrent change fails it); a new repository has none.
        parent_commit=state.sha if state.exists else None,
    )
    url = getattr(info, "pr_url", None) or getattr(info, "commit_url", None)
    if url:  # never the token
        print(f"committed: {url}", file=out)
    return info


def check_repo_id(repo_id: str) -> str:
    """Returns `repo_id` if it is `NAMESPACE/NAME` with usable parts (checked offline).

    Raises:
        ValueError: it is not.
    """
    parts = repo_id.split("/") if isinstance(repo_id, str) else []
    if len(parts) != 2 or not all(_REPO_PART.fullmatch(p) for p in parts):
        raise ValueError(
            f"repo id {repo_id!r}: expected NAMESPACE/NAME (letters, digits, '_', '-', '.')"
        )
    return repo_id
