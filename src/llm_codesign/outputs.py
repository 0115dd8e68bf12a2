"""Every file a command writes, written whole or not at all: a temporary file beside each output, renamed
into place once all of them are complete (`write_all`), so that an error, Ctrl-C, SIGTERM or SIGHUP
leaves no output half-written and no temporary file behind. A temporary file's name says whose it is,
`.NAME.<pid>.llmcs-tmp.EXT`: one a SIGKILL left (it cannot be caught) is removed by the next write to
its folder once that process is gone. `-` is standard output, where a command writes one text file."""
from __future__ import annotations

import errno
import os
import re
import signal
import sys
from pathlib import Path

from llm_codesign.errors import InputError, check_output_path

STDOUT = "-"
_TAG = "llmcs-tmp"
_TMP = re.compile(rf"^\..*\.(\d+)\.{_TAG}(\.[^.]*)?$")
_SIGNALS = tuple(s for s in (getattr(signal, n, None) for n in ("SIGINT", "SIGTERM", "SIGHUP")) if s is not None)
WRITTEN: list[str] = []  # the outputs this process put in place, in order: the CLI names them if a signal ends it after


# The one naming table of the interval bounds every writer puts in a file (newc11 #13), each a band's key
# (measure.intervals.band: lo80 ... hi95) -> the column's suffix after the metric: a frontier's CSV and JSON records
# (serve.metrics.interval_columns), sweep's Parquet and the report's CSV name the level in each; `validate --out` keeps
# issue 40's `_lo`/`_hi` for its 80% and names its 95% as the frontier does.
BOUND_SUFFIX = {"lo80": "lo80", "hi80": "hi80", "lo95": "lo95", "hi95": "hi95"}
VALIDATE_BOUND_SUFFIX = BOUND_SUFFIX | {"lo80": "lo", "hi80": "hi"}


def predictable_column(metric: str) -> str:
    """The column saying whether `metric`'s 95% interval is narrow enough to be a prediction (its band's `predictable`,
    measure.intervals.predictability): sweep's Parquet, a frontier's CSV and records, estimate's and disagg's rows
    (newc12 #4: frontier.csv gave lo80/hi80 of 26 points the table marks "?" with no flag)."""
    return f"{metric}_predictable"


def bound_columns(metric: str, keys=tuple(BOUND_SUFFIX), *, table: dict | None = None) -> dict[str, str]:
    """{band key: column name} of `metric`'s bounds `keys` as `table` (BOUND_SUFFIX unless given) names them."""
    table = BOUND_SUFFIX if table is None else table
    return {k: f"{metric}_{table[k]}" for k in keys}


def tmp_path(path: str | Path, suffix: str | None = None) -> Path:
    """The temporary file beside `path` (its suffix kept: writers that pick a format by it, matplotlib, keep it)."""
    p = Path(path)
    return p.with_name(f".{p.stem}.{os.getpid()}.{_TAG}{p.suffix if suffix is None else suffix}")


def _alive(pid: int) -> bool:
    if pid == os.getpid() or os.name == "nt":  # Windows' os.kill(pid, 0) sends Ctrl-C, not a probe: kept there
        return True
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except OSError:  # EPERM: another user's process, alive
        return True
    return True


def remove_stale(folder: str | Path) -> list[Path]:
    """Removes the temporary files in `folder` whose process is gone (a SIGKILL or a power cut ended it
    mid-write); returns them."""
    gone = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return gone
    for e in entries:
        m = _TMP.match(e.name)
        if m and e.is_file(follow_symlinks=False) and not _alive(int(m.group(1))):
            try:
                os.unlink(e.path)
                gone.append(Path(e.path))
            except OSError:  # another run removed it first, or the folder refuses: it stays, harmless
                pass
    return gone


def _existing_ancestor(p: Path) -> Path:
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def check_writable(field: str, path: str | Path, *, folder: bool = False, stdout: bool = False) -> Path:
    """Refuses, before any work, an output path this process cannot write: a folder where a file is
    wanted, a file where a folder is, or a folder that takes no new file (probed with an empty file
    removed at once: permission bits say nothing to root, and /proc refuses even root). Missing folders
    on the way are fine: `write_all` creates them. With `folder`, `path` is a folder that may exist or
    will be created. `-` is standard output where `stdout` (a command's one text file), else refused."""
    if str(path) == STDOUT:
        if stdout:
            return Path(path)
        raise InputError(field, str(path), "a file path ('-', standard output, is taken where a command writes one text file)")
    check_output_path(field, path, folder=folder)  # an empty path; folders far from any that exists (errors.check_output_path)
    p = Path(path)
    if not folder and p.is_dir():
        raise InputError(field, str(path), "a file path, not a folder")
    if not folder and p.exists() and not p.is_file():  # (through its links) the rename would put a file in its place: as root,
        # `--csv /dev/null` replaced /dev/null itself
        raise InputError(field, str(path), "a regular file's path, not a device, FIFO or socket" + ("; '-' is standard output" if stdout else ""))
    if folder and p.exists() and not p.is_dir():
        raise InputError(field, str(path), "a folder, not a file")
    where = _existing_ancestor((p if folder else p.parent).resolve())
    if not where.is_dir():
        raise InputError(field, str(path), f"a path whose folders can be created ({where} is a file)")
    probe = where / tmp_path(p, ".probe").name
    try:
        probe.open("x").close()
        probe.unlink()
    except OSError as e:
        raise InputError(field, str(path), f"a path in a folder this process may write ({e.strerror})") from None
    return p


def _make_parents(p: Path, made: list[Path]) -> None:
    """Creates the missing folders above `p`, recording each (the outermost first) so a failure removes them."""
    missing = []
    parent = p.parent
    while not parent.exists() and parent != parent.parent:
        missing.append(parent)
        parent = parent.parent
    for d in reversed(missing):
        d.mkdir()
        made.append(d)


def _block_signals():
    """Holds Ctrl-C, SIGTERM and SIGHUP back (delivered when unblocked) while the outputs are renamed into
    place, all of them or none, and while a failed write's files are removed; returns the mask to restore."""
    if not hasattr(signal, "pthread_sigmask"):
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)


def write_all(jobs, *, meanwhile=None) -> None:
    """[(writer, path), ...]: each writer writes a temporary file beside its path, then all are renamed
    into place; a failure (or a signal the CLI turns into an exception) on any leaves none of them, nor
    their temporary files, nor the folders made for them. The writers create the files themselves, so
    each gets the mode a plain open() gives under the umask. A writer may return a drawing (plot.Drawing:
    a figure another process draws meanwhile, with `wait()` and `cancel()`): each is awaited before any
    rename, and cancelled on a failure before the temporary files go. `meanwhile()` runs after the
    writers, before the drawings are awaited. An OSError names the user's path, never the temporary one."""
    tmps: list[tuple[Path, Path]] = []
    pending: list[tuple[object, Path]] = []
    made: list[Path] = []
    p = tmp = None  # the file at hand: an error names the user's path, not the temporary one
    try:
        for write, path in jobs:
            # a link's target is replaced and the link kept (a rename onto the link put a file in its place)
            p = Path(path).resolve() if Path(path).is_symlink() else Path(path)
            if p.exists() and not p.is_file():  # check_writable refuses one first; a writer reached without it stops here
                raise OSError(errno.EINVAL, "not a regular file (a device, FIFO or socket): writing would replace it", str(path))
            _make_parents(p, made)
            remove_stale(p.parent)
            tmp = tmp_path(p)
            tmps.append((tmp, p))
            done = write(tmp)
            if hasattr(done, "wait") and hasattr(done, "cancel"):
                pending.append((done, p))
        if meanwhile is not None:
            meanwhile()
        while pending:
            drawing, p = pending[0]
            drawing.wait()
            pending.pop(0)
        held = _block_signals()
        try:
            for tmp, p in tmps:
                os.replace(tmp, p)
                WRITTEN.append(str(p))
            tmps.clear()
            made.clear()
        finally:
            if held is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
    except OSError as e:  # a full disk, a quota; pyarrow's errors carry a message only, which names the temporary file
        reason = e.strerror or (str(e).replace(str(tmp), str(p)) if tmp is not None else str(e))
        raise OSError(e.errno, reason, str(p)) from None
    finally:
        held = _block_signals() if pending or tmps or made else None  # a signal now is taken once all is removed
        try:
            for drawing, _ in pending:
                drawing.cancel()
            for t, _ in tmps:
                t.unlink(missing_ok=True)
            for d in reversed(made):
                try:
                    d.rmdir()
                except OSError:  # something else was put there meanwhile: left
                    pass
        finally:
            if held is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)


def write_text(path: str | Path, text: str, *, executable: bool = False) -> None:
    """`text` to `path` whole or not at all, or to standard output for `-`; `executable` adds the run bits
    the umask allows (a shell script)."""
    if str(path) == STDOUT:
        sys.stdout.write(text)
        sys.stdout.flush()
        WRITTEN.append(STDOUT)
        return

    def write(t: Path) -> None:
        t.write_text(text)
        if executable:
            umask = os.umask(0)
            os.umask(umask)
            t.chmod(0o777 & ~umask)

    write_all([(write, path)])


def write_rows(path: str | Path, fieldnames, rows) -> None:
    """Rows as CSV, whole or not at all (or to standard output for `-`)."""
    import csv
    import io

    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=list(fieldnames))
    w.writeheader()
    w.writerows(rows)
    write_text(path, buf.getvalue())
