"""Writing a command's outputs: safe unique names, whole-folder replacement, never through a
symbolic link, one run per output, errors naming the real file (docs/pipeline.md, "Reading and
writing").
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import glob
import hashlib
import itertools
import os
import re
import shutil
import stat
import tempfile
import unicodedata
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path

# Longest name made, in UTF-8 bytes: file systems allow 255, and the commands add suffixes
# (`.partial.settings.json`, `-12`, a staging folder's `.NAME.tmp-xxxxxxxx-old`).
MAX_NAME_BYTES = 120

# Characters that Windows refuses in a name, and look-alikes of the path separators.
_FORBIDDEN = frozenset('<>:"/\\|?*')
_SEPARATOR_LOOKALIKES = frozenset("\u2044\u2215\u2216\u2571\u2572\u29f5\u29f8\u29f9\uff0f\uff3c")
# Device names Windows reserves, with or without an extension (`con.json`).
_WINDOWS_DEVICE = re.compile(r"(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?", re.IGNORECASE)


def _safe_char(c: str) -> str:
    # C*: control, format (bidi overrides, zero-width), surrogate, private, unassigned;
    # Z*: line/paragraph separators and spaces other than the plain one; NFKC folds e.g. the
    # full-width solidus to "/".
    unsafe = unicodedata.category(c)[0] in "CZ" or c in _FORBIDDEN or c in _SEPARATOR_LOOKALIKES
    unsafe = unsafe or not c.isascii() and _FORBIDDEN & set(unicodedata.normalize("NFKC", c))
    return c if c == " " or not unsafe else "_"


def _clean(text: str, max_bytes: int) -> str:
    """`text` as one safe path component (not yet unique)."""
    # Cut first (a byte short, for the device prefix), so that no cut can end on a dot.
    name = _truncate("".join(map(_safe_char, str(text))), max_bytes - 1)
    # Leading dots hide the file (and make `.`, `..`); a leading dash reads as an option;
    # Windows drops trailing dots and spaces, so `a.` and `a` would be one file there.
    rest = name.lstrip(". -")
    name = "_" * (len(name) - len(rest)) + rest
    rest = name.rstrip(". ")
    name = (rest + "_" * (len(name) - len(rest))) or "_"
    return "_" + name if _WINDOWS_DEVICE.fullmatch(name) else name


def _truncate(name: str, max_bytes: int) -> str:
    return name.encode("utf-8")[:max_bytes].decode("utf-8", "ignore")


def safe_name(text: str, taken: Collection[str] = (), *, max_bytes: int = MAX_NAME_BYTES) -> str:
    """A safe path component made from `text` (a file stem, a system name), unique among `taken`.

    The text is kept when it is already safe (readable names); otherwise each unsafe character
    becomes `_`, leading dots and dashes become `_`, a Windows device name gets a `_` prefix, and
    the name is cut to `max_bytes` (UTF-8). A name in `taken` (compared case-folded) gets the first
    free suffix `-2`, `-3`, ...; the result is deterministic."""
    base = _clean(text, max_bytes)
    used = {t.casefold() for t in taken}
    if base.casefold() not in used:
        return base
    for n in itertools.count(2):
        name = _truncate(base, max_bytes - len(f"-{n}")) + f"-{n}"
        if name.casefold() not in used:
            return name


def unique_names(
    texts: Iterable[str], reserved: Collection[str] = (), *, max_bytes: int = MAX_NAME_BYTES
) -> list[str]:
    """Safe, distinct names for several inputs, in their order (see `safe_name`; `reserved`: the
    command's fixed files). The first input of each cleaned name keeps it; later ones get a suffix
    that no other input's name uses (so `a`, `a`, `a-2` become `a`, `a-3`, `a-2`)."""
    bases = [_clean(t, max_bytes) for t in texts]
    taken = {r.casefold() for r in reserved}
    names: list[str | None] = [None] * len(bases)
    for i, base in enumerate(bases):  # the first of each name keeps it
        if base.casefold() not in taken:
            names[i] = base
            taken.add(base.casefold())
    for i, base in enumerate(bases):
        if names[i] is None:
            names[i] = safe_name(base, taken, max_bytes=max_bytes)
            taken.add(names[i].casefold())
    return names  # type: ignore[return-value]


def current_umask() -> int:
    """The process's umask (read by setting it and putting it back)."""
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def make_parent(path: str | os.PathLike) -> None:
    """Creates the folder `path` goes in, and refuses a `path` that cannot be a file there.

    Raises:
        IsADirectoryError: `path` is a folder.
        NotADirectoryError: a file stands where one of its folders should be (named).
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a folder; give a file path", str(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        # mkdir names the first missing folder, not the file in the way: name that file.
        blocker = next((p for p in (path.parent, *path.parent.parents) if p.is_file()), path.parent)
        raise NotADirectoryError(
            errno.ENOTDIR, f"is a file, so {path} cannot be created", str(blocker)
        ) from None


def check_output_file(path: str | os.PathLike, what: str) -> None:
    """Checks, before any work, that a file can be written at `path`: not a folder, no file
    where one of its folders should be, and the nearest existing folder writable.

    Raises:
        ValueError: names `what` (how messages name the output: `--output out.jsonl`) and what
            is in the way.
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{what}: is a folder; give a file path")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"{what}: {parent} is a file, not a folder")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise ValueError(f"{what}: cannot write in the folder {parent}")
            break


def refuse_unsafe_output(path: str | os.PathLike, what: str | None = None) -> None:
    """Refuses (a ValueError naming `what`, by default the path) an output file or folder that
    is a symbolic link, dangling or not (docs/pipeline.md §0 says why), or an existing device,
    pipe or socket: an atomic write would replace `/dev/null` or a FIFO with a regular file,
    and an append would write into whatever reads it."""
    if os.path.islink(path):
        raise ValueError(
            f"{what or path}: is a symbolic link (to {os.readlink(path)}); outputs are never "
            "written through a link: give the real path, or remove the link"
        )
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return  # a new output; a file standing where a folder should be is named on writing
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise ValueError(
            f"{what or path}: is a device, pipe or socket, not a regular file; outputs are "
            "written to files or folders only"
        )


def check_distinct_outputs(outputs: dict[str, str | os.PathLike | None]) -> None:
    """Refuses (a ValueError naming both) two outputs of one run that are one file: the second
    write would replace the first. `outputs` maps how each is named in messages
    (`--export-json`) to its path; None entries (options not given) are skipped."""
    seen: dict[str, str] = {}
    for what, path in outputs.items():
        if path is None:
            continue
        key = os.path.realpath(path)
        if key in seen:
            raise ValueError(f"{what} {path} is also {seen[key]}: give each output its own file")
        seen[key] = what


@contextlib.contextmanager
def real_name_errors(path: str | os.PathLike) -> Iterator[None]:
    """Re-raises an OSError of the block as one naming `path` (not a temporary file, or no file).

    `[Errno 28] No space left on device` becomes `[Errno 28] No space left on device: 'OUT'`.
    """
    try:
        yield
    except OSError as err:
        if err.errno is None or err.filename == str(path):
            raise
        raise OSError(err.errno, err.strerror or str(err), str(path)) from None


class OutputBusy(ValueError):
    """Another run holds the lock of this output."""


# The longest file name most file systems take (bytes).
NAME_MAX = 255


def hidden_stem(name: str, room: int) -> str:
    """`.NAME`, the stem of a hidden companion file of output NAME (a lock, a temporary file, a
    staging folder), leaving `room` bytes for what follows it. A name too long for that is cut
    and given a hash of the whole name, so a valid output name never fails on its companions."""
    stem = f".{name}"
    if len(stem.encode()) + room <= NAME_MAX:
        return stem
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    keep = NAME_MAX - room - len(digest) - 2
    cut = name.encode("utf-8", "surrogateescape")[:keep].decode("utf-8", "ignore")
    return f".{cut}-{digest}"


def lock_path(path: str | os.PathLike) -> Path:
    """The lock file of an output: `.NAME.lock` beside it (see `hidden_stem`)."""
    path = Path(path)
    return path.with_name(hidden_stem(path.name, len(".lock")) + ".lock")


# What `replace_folder` adds to a staging folder's stem: `.tmp-` + mkdtemp's 8 + `-old`.
_STAGING_ROOM = len(".tmp-") + 8 + len("-old")


@contextlib.contextmanager
def output_lock(path: str | os.PathLike, what: str | None = None) -> Iterator[None]:
    """Holds the exclusive lock of output `path` (a file or a folder) for the block: an `flock`
    on `.NAME.lock` beside it holding the owner's pid, released (and the file removed) when the
    block ends, and by the kernel when the process dies, so a dead process's lock file is taken
    over. Not re-entrant: take it once per run.

    Raises:
        OutputBusy: another live process holds the lock; one line naming the output (`what`,
            e.g. `--output runs/a.jsonl`; the path by default) and the pid.
        OSError: the lock file cannot be made (e.g. a read-only folder), naming it.
    """
    lock = lock_path(path)
    make_parent(lock)  # a file where a folder should be: named
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise OutputBusy(
                f"{what or path}: another run (pid {holder}) is writing this output; wait for "
                "it to finish or choose another output"
            ) from None
        # The holder we waited on may have removed the file as it let go: lock the new one.
        try:
            same = os.fstat(fd).st_ino == os.stat(lock, follow_symlinks=False).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        lock.unlink(missing_ok=True)  # while still holding it: see the check above
        os.close(fd)


# Locks a process holds beyond one block (`hold_lock`), by resolved output path.
_HELD: dict[Path, contextlib.ExitStack] = {}


def hold_lock(path: str | os.PathLike, what: str | None = None) -> None:
    """Takes the lock of output `path` (see `output_lock`) until `release_lock` or process exit,
    for commands whose check of the output and final write sit in different functions (the build
    stages). Taking a lock this process already holds is a no-op, so a run that failed in between
    does not lock its own process out."""
    key = Path(path).absolute()
    if key not in _HELD:
        stack = contextlib.ExitStack()
        stack.enter_context(output_lock(path, what))
        _HELD[key] = stack


def release_lock(path: str | os.PathLike) -> None:
    """Releases a lock taken with `hold_lock` (nothing if this process does not hold it)."""
    if (stack := _HELD.pop(Path(path).absolute(), None)) is not None:
        stack.close()


def check_replaceable(
    target: str | os.PathLike,
    owned: Callable[[Path], bool] | None = None,
    what: str | None = None,
    whose: str = "this command's",
) -> None:
    """Checks, before any work, that `replace_folder` may replace `target`: `owned` tells an
    entry of an existing folder the command writes (None: only an empty folder may be replaced);
    a folder holding anything else is the user's and is never replaced. Messages name the folder
    as `what` (by default the path) and its files as `whose` ("a split's").

    Raises:
        ValueError: `target` is a link or a file, a file stands where one of its folders should
            be, or it holds files the command does not write; names them.
    """
    target = Path(target)
    what = what or str(target)
    refuse_unsafe_output(target, what)
    if target.exists() and not target.is_dir():
        raise ValueError(f"{what} is a file, not a folder")
    blocker = next((p for p in target.parents if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise ValueError(f"{what}: {blocker} is a file, not a folder")
    if target.is_dir():
        other = sorted(p.name for p in target.iterdir() if not (owned and owned(p)))
        if other:
            raise ValueError(
                f"{what} holds other files than {whose} ({', '.join(other[:5])}); choose an "
                "empty or new folder"
            )


@contextlib.contextmanager
def replace_folder(
    target: str | os.PathLike,
    owned: Callable[[Path], bool] | None = None,
    what: str | None = None,
    whose: str = "this command's",
    mode: int | None = None,
) -> Iterator[Path]:
    """Yields an empty staging folder; when the block ends normally it replaces `target`.

    Write every output file into the staging folder (`.NAME.tmp-*`, a sibling of `target`, so
    the swap is a rename on one file system); if the block or the swap fails, `target` keeps the
    previous run's files, untouched. Leftovers of an interrupted earlier run are removed first.
    `owned`, `what` and `whose` are `check_replaceable`'s; `mode` is the new folder's (by default
    what a plain mkdir gives).

    Raises:
        ValueError: see `check_replaceable`.
        OSError: the block's or the swap's, naming the file under `target`, never the staging
            folder.
    """
    target = Path(target)
    check_replaceable(target, owned, what, whose)
    target.parent.mkdir(parents=True, exist_ok=True)
    stem = hidden_stem(target.name, _STAGING_ROOM)
    for leftover in target.parent.glob(f"{glob.escape(stem)}.tmp-*"):
        _remove(leftover)
    with real_name_errors(target):
        staging = Path(tempfile.mkdtemp(prefix=f"{stem}.tmp-", dir=target.parent))
    old = staging.with_name(staging.name + "-old")
    try:
        try:
            yield staging
        except OSError as err:  # name the file as it would have been, not the staging copy
            inside = err.filename and Path(err.filename).is_relative_to(staging)
            if not inside:
                raise
            real = target / Path(err.filename).relative_to(staging)
            raise OSError(err.errno, err.strerror or str(err), str(real)) from None
        # mkdtemp makes a 0700 folder: give it the mode a plain mkdir would have.
        staging.chmod(0o777 & ~current_umask() if mode is None else mode)
        with real_name_errors(target):
            check_replaceable(target, owned, what, whose)  # nothing new appeared while we worked
            if target.exists():
                target.rename(old)
            try:
                staging.rename(target)
            except BaseException:
                if old.exists():
                    old.rename(target)
                raise
    finally:
        _remove(staging)
        _remove(old)


def _remove(path: Path) -> None:
    """Removes a file, a link (never its target) or a folder tree, ignoring what is gone."""
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    elif path.exists():
        shutil.rmtree(path, ignore_errors=True)
