"""Models that are not bundled, read from the Hugging Face Hub (optional extra `hub`: huggingface_hub).

`get_hub_model("org/name")` or `"org/name@revision"` reads the repository's config.json (and its
hf_quant_config.json where it has one) through the local Hugging Face cache first, then the network,
and pins the revision it read: the snapshot's commit hash is recorded on the model (`notes`). Only the
JSON files are read, so no code from the repository ever runs (no trust_remote_code: a config's
`auto_map` is ignored). HF_HUB_OFFLINE=1 reads the cache only; a miss is one line saying so."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

from llm_codesign.errors import InputError
from llm_codesign.spec.model import ModelSpec, from_hf_config

REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


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


def _download(repo: str, filename: str, revision: str | None, *, required: bool, local: bool = False) -> Path | None:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError

    # LocalEntryNotFoundError derives from EntryNotFoundError in huggingface_hub 1.x+: catch it first
    try:
        # local_files_only under HF_HUB_OFFLINE as well, so a miss names the cache rather than the network
        return Path(hf_hub_download(repo, filename, revision=revision, cache_dir=_cache_dir(), local_files_only=local or _offline()))
    except LocalEntryNotFoundError:
        if not required:
            return None
        where = f"the local Hugging Face cache ({_cache_dir()})"
        if _offline():
            raise InputError("model", repo, f"a model in {where}: HF_HUB_OFFLINE=1 forbids downloading it, and the cache has no "
                             f"{filename} for revision {revision or 'main'}") from None
        raise InputError("model", repo, f"a repository the Hub can be reached for, or one in {where}: the download failed") from None
    except EntryNotFoundError:
        if required:
            raise InputError("model", repo, f"a Hugging Face repository with a {filename}") from None
        return None
    except (RepositoryNotFoundError, RevisionNotFoundError) as e:
        raise InputError("model", repo + (f"@{revision}" if revision else ""),
                         f"a Hugging Face repository and revision that exist and that you may read ({type(e).__name__})") from None


def get_hub_model(ref: str, *, local_only: bool = False) -> ModelSpec:
    """A model from its Hugging Face repository's config.json, at a pinned revision. `local_only`: from
    the local cache's files alone, through no Hub client call (the web page's `serve --hub-cache`):
    huggingface_hub 1.x+ fetches an agent registry from the Hub to build its headers, even for
    hf_hub_download(local_files_only=True)."""
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        raise InputError("model", ref, "a bundled model, a config.json path, or a Hugging Face id with the hub extra installed "
                         "(pip install 'llm-codesign[hub]')") from None
    repo, _, revision = str(ref).partition("@")
    from huggingface_hub import try_to_load_from_cache

    def in_cache(filename: str) -> Path | None:
        found = try_to_load_from_cache(repo, filename, cache_dir=_cache_dir(), revision=revision or None)
        return Path(found) if isinstance(found, str) else None

    found = in_cache("config.json")
    cached = found is not None
    if local_only and not cached:
        raise InputError("model", repo, f"a model in the local Hugging Face cache ({_cache_dir()}): only the cache is read here, "
                         f"and it has no config.json for revision {revision or 'main'}")
    path = found if local_only else _download(repo, "config.json", revision or None, required=True)
    try:
        cfg = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError("model", ref, f"a repository whose config.json is valid JSON ({type(e).__name__})") from None
    # a config read from the cache takes its quantization file from the same snapshot, with no network call
    qpath = in_cache("hf_quant_config.json") if local_only else _download(repo, "hf_quant_config.json", revision or None,
                                                                            required=False, local=cached)
    quant = json.loads(qpath.read_text()) if qpath else None
    # the cache lays files out as models--org--name/snapshots/<commit>/config.json: the commit pins what was read
    commit = path.parent.name if path.parent.parent.name == "snapshots" else (revision or "unknown")
    cfg = {k: v for k, v in cfg.items() if k != "auto_map"}  # remote code is never looked at, let alone run
    spec = from_hf_config(cfg, repo.split("/")[-1].lower(), quant, (repo,))
    from dataclasses import replace

    return replace(spec, notes=spec.notes + (f"config.json from the Hugging Face Hub: {repo}@{commit}",))
