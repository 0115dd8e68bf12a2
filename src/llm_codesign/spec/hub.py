"""Models that are not bundled, read from the Hugging Face Hub (optional extra `hub`: huggingface_hub).

`get_hub_model("org/name")` or `"org/name@revision"` reads the repository's config.json (and its
hf_quant_config.json where it has one) through the local Hugging Face cache first, then the network,
and pins the revision it read: the snapshot's commit hash is recorded on the model (`notes`). Only the
JSON files are read, so no code from the repository ever runs (no trust_remote_code: a config's
`auto_map` is ignored). HF_HUB_OFFLINE=1 reads the cache only; a miss is one line saying so.

Where the Hub cannot be reached (air-gapped clusters), one try with a short timeout decides it, with
no retries and nothing logged, and the answer is kept for the process: `validate` asks once, however
many rows name the model."""
from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path

from llm_codesign.errors import InputError, parse_nested
from llm_codesign.spec.model import ModelSpec, Note, from_hf_config

REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
COMMIT = re.compile(r"^[0-9a-f]{40}$")
# seconds to wait for the Hub's answer to one request (HF_HUB_ETAG_TIMEOUT overrides it). huggingface_hub
# waits 10 s, and where no file is cached its hf_hub_download then tries 5 more times, 1+2+4+8+8 s apart,
# logging each (file_download.py, utils/_http.py in 2.4): 24 s a look-up with no network. A config.json's
# HEAD needs well under a second wherever the Hub can be reached at all.
TIMEOUT_S = 5.0
# what each look-up answered, a model or the InputError, by (ref, cache, offline, endpoint, local_only), the most recent
# LOOKED_UP_MAX kept (an LRU, as measure.calibrate's temporary profiles): a server asked for many ids stays bounded.
# A local_only answer (the page's `serve --hub-cache`) is kept with the cache's file it read (_cache_stamp) and only while
# that file is the one the cache resolves to; a miss is never kept: the operator may download it (review crev #7)
LOOKED_UP_MAX = 256
_LOOKED_UP: OrderedDict[tuple, tuple] = OrderedDict()
_LOOKED_UP_LOCK = threading.Lock()
# _quiet's callers in flight and the logger level the first of them found (restored by the last: review crev #11)
_QUIET_LOCK = threading.Lock()
_QUIET: list = [0, logging.NOTSET]


def looks_like_repo(ref: str) -> bool:
    """`org/name` or `org/name@revision` (and no such local path)."""
    repo = str(ref).split("@", 1)[0]
    return bool(REPO_ID.match(repo)) and not Path(str(ref)).exists()


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _cache_dir() -> str:
    """HF_HUB_CACHE as it is now (huggingface_hub reads it once, at import)."""
    from huggingface_hub import constants

    return os.environ.get("HF_HUB_CACHE") or constants.HF_HUB_CACHE


def _endpoint() -> str:
    """HF_ENDPOINT as it is now (huggingface_hub reads it once, at import)."""
    from huggingface_hub import constants

    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def _timeout() -> float:
    try:
        t = float(os.environ.get("HF_HUB_ETAG_TIMEOUT", ""))
    except ValueError:
        return TIMEOUT_S
    return t if t > 0 else TIMEOUT_S


def _request_errors() -> tuple[type[BaseException], ...]:
    """What a request that gets no answer raises: requests' errors are OSErrors (huggingface_hub 0.x, as
    is its HfHubHTTPError, e.g. for a 5xx); httpx's and httpx2's (1.x, 2.x) derive from an HTTPError that
    HfHubHTTPError derives from too."""
    from huggingface_hub.errors import HfHubHTTPError

    return (OSError, *(c for c in HfHubHTTPError.__mro__[1:] if c.__name__ == "HTTPError"))


@contextmanager
def _quiet():
    """huggingface_hub's log lines (retries, fallbacks) kept off stderr while we call it: the outcome
    reaches the user as our one line. Counted under a lock, so that look-ups on several threads (the page's
    requests) silence it from the first's start to the last's end and restore the level the first found; a level
    saved and restored by each was left silenced for good when two interleaved. A logger's level, not a filter:
    its child loggers (huggingface_hub.file_download) log through the parent's level, not its filters."""
    log = logging.getLogger("huggingface_hub")
    with _QUIET_LOCK:
        if _QUIET[0] == 0:
            _QUIET[1] = log.level
            log.setLevel(logging.ERROR + 1)
        _QUIET[0] += 1
    try:
        yield
    finally:
        with _QUIET_LOCK:
            _QUIET[0] -= 1
            if _QUIET[0] == 0:
                log.setLevel(_QUIET[1])


def _fill_hint(repo: str, filename: str) -> str:
    return (f"pass a config.json path instead, or fill the cache where the Hub can be reached (hf download {repo} {filename}) "
            "and set HF_HUB_OFFLINE=1 to read the cache only")


def _download(repo: str, filename: str, revision: str | None, *, required: bool, local: bool = False, cached=...) -> Path | None:
    """`filename` of `repo`: `cached`, the cache's copy where the caller has looked it up already (a path, or None)."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url, try_to_load_from_cache
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError

    if cached is ...:
        cached = try_to_load_from_cache(repo, filename, cache_dir=_cache_dir(), revision=revision)
    # a commit found in the cache cannot have changed: no request
    local = local or _offline() or bool(revision and COMMIT.match(revision) and isinstance(cached, str))
    endpoint = _endpoint()
    # LocalEntryNotFoundError derives from EntryNotFoundError in huggingface_hub 1.x+: catch it first
    try:
        if not local:
            # one HEAD request, no retries (retry_on_errors is False by default): hf_hub_download would retry
            # five times where it finds nothing cached, and cannot be told not to
            try:
                get_hf_file_metadata(hf_hub_url(repo, filename, revision=revision, endpoint=endpoint), timeout=_timeout())
            except (EntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError):
                raise
            except _request_errors() as e:
                if not isinstance(cached, str):
                    raise InputError("model", repo, f"a model in the local Hugging Face cache ({_cache_dir()}) or on a Hub that answers "
                                     f"({endpoint} did not: {type(e).__name__}); {_fill_hint(repo, filename)}") from None
                local = True  # the Hub cannot be reached: the cached copy, as hf_hub_download would read
        # local_files_only under HF_HUB_OFFLINE as well, so a miss names the cache rather than the network
        return Path(hf_hub_download(repo, filename, revision=revision, cache_dir=_cache_dir(), endpoint=endpoint,
                                    etag_timeout=_timeout(), local_files_only=local))
    except LocalEntryNotFoundError:
        if not required:
            return None
        where = f"the local Hugging Face cache ({_cache_dir()})"
        if _offline():
            raise InputError("model", repo, f"a model in {where}: HF_HUB_OFFLINE=1 forbids downloading it, and the cache has no "
                             f"{filename} for revision {revision or 'main'}; {_fill_hint(repo, filename)}") from None
        raise InputError("model", repo, f"a model in {where} or on a Hub that answers; {_fill_hint(repo, filename)}") from None
    except EntryNotFoundError:
        if required:
            raise InputError("model", repo, f"a Hugging Face repository with a {filename}") from None
        return None
    except (RepositoryNotFoundError, RevisionNotFoundError) as e:
        raise InputError("model", repo + (f"@{revision}" if revision else ""),
                         f"a Hugging Face repository and revision that exist and that you may read ({type(e).__name__})") from None
    except _request_errors() as e:  # the Hub answered the HEAD, then not the download
        raise InputError("model", repo, f"a model on a Hub that answers ({endpoint}: {type(e).__name__} downloading {filename}); "
                         f"{_fill_hint(repo, filename)}") from None


def _json(path: Path, ref: str) -> dict:
    try:
        doc = parse_nested(json.loads, path.read_text(encoding="utf-8-sig"), "model", f"{ref}: {path.name}")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError("model", ref, f"a repository whose {path.name} is valid JSON ({type(e).__name__})") from None
    if not isinstance(doc, dict):
        raise InputError("model", ref, f"a repository whose {path.name} is a JSON object")
    return doc


def _read(ref: str, local_only: bool, found=...) -> ModelSpec:
    """`found`: the cache's config.json where the caller has looked it up (get_hub_model's stamp: a path, or None), so that
    the cache is asked for it once and the file read is the one the stamp names."""
    repo, _, revision = str(ref).partition("@")
    from huggingface_hub import try_to_load_from_cache

    def in_cache(filename: str) -> Path | None:
        found = try_to_load_from_cache(repo, filename, cache_dir=_cache_dir(), revision=revision or None)
        return Path(found) if isinstance(found, str) else None

    found = in_cache("config.json") if found is ... else (Path(found) if found else None)
    cached = found is not None
    if local_only and not cached:
        raise InputError("model", repo, f"a model in the local Hugging Face cache ({_cache_dir()}): only the cache is read here, "
                         f"and it has no config.json for revision {revision or 'main'}")
    path = found if local_only else _download(repo, "config.json", revision or None, required=True,
                                              cached=str(found) if found else None)
    cfg = _json(path, ref)
    # a config read from the cache takes its quantization file from the same snapshot, with no network call
    qpath = in_cache("hf_quant_config.json") if local_only else _download(repo, "hf_quant_config.json", revision or None,
                                                                            required=False, local=cached)
    quant = _json(qpath, ref) if qpath else None
    # the cache lays files out as models--org--name/snapshots/<commit>/config.json: the commit pins what was read
    commit = path.parent.name if path.parent.parent.name == "snapshots" else (revision or "unknown")
    cfg = {k: v for k, v in cfg.items() if k != "auto_map"}  # remote code is never looked at, let alone run
    spec = from_hf_config(cfg, repo.split("/")[-1].lower(), quant, (repo,))
    from dataclasses import replace

    return replace(spec, notes=spec.notes + (Note(f"config.json from the Hugging Face Hub: {repo}@{commit}", kind="source"),))


def get_hub_model(ref: str, *, local_only: bool = False) -> ModelSpec:
    """A model from its Hugging Face repository's config.json, at a pinned revision. What a look-up
    answers (the model, or the InputError) is kept (the LOOKED_UP_MAX most recent), so a run prices one revision and
    asks an unreachable Hub once; with `local_only`, while the cache resolves to the file it read, and a miss not at all. `local_only`: from the local cache's files alone, through no Hub
    client call (the web page's `serve --hub-cache`): huggingface_hub 1.x+ fetches an agent registry
    from the Hub to build its headers, even for hf_hub_download(local_files_only=True)."""
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        raise InputError("model", ref, "a bundled model, a config.json path, or a Hugging Face id with the hub extra installed "
                         "(pip install 'llm-codesign[hub]')") from None
    key = (str(ref), _cache_dir(), _offline(), _endpoint(), local_only)
    stamp = _cache_stamp(ref) if local_only else None
    with _LOOKED_UP_LOCK:
        kept = _LOOKED_UP.get(key)
        if kept is not None and kept[0] == stamp:
            _LOOKED_UP.move_to_end(key)
    if kept is None or kept[0] != stamp:
        try:
            with _quiet():
                got = _read(ref, local_only, (stamp and stamp[0]) if local_only else ...)
        except InputError as e:
            got = e
        if not (local_only and stamp is None):  # a cache miss is asked again: the operator may download it
            with _LOOKED_UP_LOCK:
                _LOOKED_UP[key] = (stamp, got)
                _LOOKED_UP.move_to_end(key)
                while len(_LOOKED_UP) > LOOKED_UP_MAX:
                    _LOOKED_UP.popitem(last=False)
    else:
        got = kept[1]
    if isinstance(got, InputError):
        raise type(got)(got.field, got.value, got.valid)  # a fresh one (UnsupportedModelError stays one)
    return got


def _cache_stamp(ref: str) -> tuple | None:
    """The config.json the local cache resolves `ref` to (refs/<revision> to a snapshot), with its size and time, or
    None where it has none: a look-up of a few file stats, which moves when the operator downloads or `main` moves."""
    from huggingface_hub import try_to_load_from_cache

    repo, _, revision = str(ref).partition("@")
    found = try_to_load_from_cache(repo, "config.json", cache_dir=_cache_dir(), revision=revision or None)
    if not isinstance(found, str):
        return None
    try:
        st = Path(found).stat()
    except OSError:
        return None
    return found, st.st_size, st.st_mtime_ns
