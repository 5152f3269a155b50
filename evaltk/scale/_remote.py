"""Stores and outputs on object storage (``s3://``, ``gs://``, ``memory://``, any fsspec URL).

A local path (or ``file://`` URL) takes the local code path unchanged; anything else
goes through `fsspec <https://filesystem-spec.readthedocs.io>`_ with the caller's
``storage_options`` (credentials, endpoint), passed to every worker.  The filesystem's
own listing finds partitions (never ``Path.rglob``, never a local folder named
``s3:``).  A worker stages its partition's input files in a local temporary folder,
scores them as local files, writes its output files there (atomically, as locally)
and uploads each with one PUT (an object appears whole or not at all), its marker
last; the driver writes the completion record last of all.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._io import json_text
from ..errors import InputError, SchemaViolation, UnreadableInput

__all__: list[str] = []  # internal


def is_remote(path: Any) -> bool:
    """True for a URL with a scheme other than ``file://`` (a Windows drive letter is not a scheme)."""
    s = str(path)
    return "://" in s and not s.startswith("file://")


def local(path: Any) -> str:
    """A local path from a path or ``file://`` URL, made absolute (on the driver)."""
    s = str(path)
    if s.startswith("file://"):
        s = s[len("file://"):]
    return os.path.abspath(os.path.expanduser(s))


def filesystem(url: str, storage_options: Mapping[str, Any] | None) -> tuple[Any, str]:
    """``(fs, path)`` of an fsspec URL (``path`` without the protocol)."""
    try:
        import fsspec
    except ImportError:  # pragma: no cover - fsspec comes with dask
        raise ImportError("object storage needs `fsspec` (and s3fs / gcsfs): pip install \"evaltk[scale]\"") from None
    try:
        fs, path = fsspec.core.url_to_fs(url, **dict(storage_options or {}))
    except (ImportError, ValueError) as e:
        raise UnreadableInput(f"cannot open this URL ({e})", file=url) from None
    return fs, path.rstrip("/")


def join(url: str, *parts: str) -> str:
    return "/".join([url.rstrip("/"), *(p.strip("/") for p in parts)])


def find(url: str, suffixes: Sequence[str], storage_options: Mapping[str, Any] | None) -> list[str]:
    """The files under ``url`` (or ``url`` itself) with one of ``suffixes``, as full URLs, sorted;
    names starting with ``.`` or ``_`` (temporaries, markers) are skipped."""
    fs, root = filesystem(url, storage_options)
    if fs.isfile(root):
        return [url]
    if not fs.isdir(root):
        raise UnreadableInput("no such file or folder", file=url)
    out = []
    for p in sorted(fs.find(root)):
        rel = p[len(root):].strip("/")
        if Path(p).suffix.lower() in suffixes and not any(s.startswith((".", "_")) for s in rel.split("/")):
            out.append(join(url, rel))
    return out


def exists(url: str, storage_options: Mapping[str, Any] | None) -> bool:
    fs, p = filesystem(url, storage_options)
    return bool(fs.exists(p))


def read_bytes(url: str, storage_options: Mapping[str, Any] | None) -> bytes:
    fs, p = filesystem(url, storage_options)
    try:
        return fs.cat_file(p)
    except FileNotFoundError:
        raise UnreadableInput("no such file", file=url) from None


def read_json(url: str, storage_options: Mapping[str, Any] | None) -> Any:
    try:
        return json.loads(read_bytes(url, storage_options))
    except ValueError as e:
        raise InputError(f"not valid JSON ({e})", file=url) from None


def write_bytes(url: str, data: bytes, storage_options: Mapping[str, Any] | None) -> None:
    """One PUT: the object appears whole or not at all."""
    fs, p = filesystem(url, storage_options)
    fs.pipe_file(p, data)


def write_json(url: str, doc: Any, storage_options: Mapping[str, Any] | None) -> None:
    write_bytes(url, (json_text(doc, ensure_ascii=False, allow_nan=False) + "\n").encode(),
                storage_options)


def upload(local_file: str | Path, url: str, storage_options: Mapping[str, Any] | None) -> None:
    fs, p = filesystem(url, storage_options)
    fs.put_file(str(local_file), p)


def digest(url: str, storage_options: Mapping[str, Any] | None) -> str:
    fs, p = filesystem(url, storage_options)
    h = hashlib.sha256()
    try:
        with fs.open(p, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except FileNotFoundError:
        raise SchemaViolation("integrity check `digest`: a recorded file is missing", file=url) from None
    return h.hexdigest()


def check_digest(url: str, expected: str, storage_options: Mapping[str, Any] | None, *, recorded_in: str) -> None:
    got = "sha256:" + digest(url, storage_options)
    if got != expected:
        raise SchemaViolation(f"integrity check `digest`: the file changed since {recorded_in} recorded it "
                              f"({expected} recorded, {got} now)", file=url)


def remove(url: str, storage_options: Mapping[str, Any] | None) -> None:
    fs, p = filesystem(url, storage_options)
    if fs.exists(p):
        fs.rm(p, recursive=True)


def read_table(path: str, storage_options: Mapping[str, Any] | None, **kw: Any) -> Any:
    """A Parquet file as an Arrow table, local or remote."""
    import pyarrow.parquet as pq

    if not is_remote(path):
        return pq.read_table(path, **kw)
    fs, p = filesystem(path, storage_options)
    with fs.open(p, "rb") as fh:
        return pq.read_table(fh, **kw)


@contextlib.contextmanager
def staged(urls: Sequence[str | None], storage_options: Mapping[str, Any] | None) -> Iterator[list[str | None]]:
    """Local copies of remote files (local paths pass through), in a temporary folder removed afterwards;
    each copy keeps its file name (its format is read from the extension)."""
    with tempfile.TemporaryDirectory(prefix="evaltk-stage-") as d:
        out: list[str | None] = []
        for i, u in enumerate(urls):
            if u is None or not is_remote(u):
                out.append(u)
                continue
            dest = Path(d) / str(i) / u.rstrip("/").rsplit("/", 1)[-1]
            dest.parent.mkdir(parents=True)
            fs, p = filesystem(u, storage_options)
            try:
                fs.get_file(p, str(dest))
            except FileNotFoundError:
                raise UnreadableInput("no such file", file=u) from None
            out.append(str(dest))
        yield out


def register(con: Any, urls: Sequence[str | None], storage_options: Mapping[str, Any] | None) -> None:
    """Let a DuckDB connection read the remote URLs among ``urls`` through fsspec."""
    seen = set()
    for u in urls:
        if u is None or not is_remote(u):
            continue
        fs, _ = filesystem(u, storage_options)
        if id(fs) not in seen:
            seen.add(id(fs))
            con.register_filesystem(fs)


class Root:
    """A folder (local path or URL) and the few operations a scored dataset needs, with
    relative names (``scores/week=1/part-0.parquet``); local folders use :mod:`evaltk._io`
    (atomic writes), URLs fsspec (one PUT per object)."""

    def __init__(self, root: str | Path, storage_options: Mapping[str, Any] | None = None) -> None:
        self.remote = is_remote(root)
        self.root = str(root).rstrip("/") if self.remote else local(root)
        self.so = dict(storage_options or {})

    def __str__(self) -> str:
        return self.root

    def at(self, rel: str) -> str:
        return join(self.root, rel) if self.remote else str(Path(self.root) / rel)

    def path(self) -> str | Path:
        return self.root if self.remote else Path(self.root)

    def isfile(self, rel: str) -> bool:
        if self.remote:
            fs, p = filesystem(self.at(rel), self.so)
            return bool(fs.isfile(p))
        return Path(self.at(rel)).is_file()

    def exists(self, rel: str) -> bool:
        return exists(self.at(rel), self.so) if self.remote else os.path.lexists(self.at(rel))

    def isdir(self) -> bool:
        if self.remote:
            fs, p = filesystem(self.root, self.so)
            return bool(fs.isdir(p))
        return Path(self.root).is_dir()

    def read_json(self, rel: str) -> Any:
        if self.remote:
            return read_json(self.at(rel), self.so)
        from .._io import read_json as rj

        return rj(self.at(rel))

    def write_json(self, rel: str, doc: Any) -> None:
        if self.remote:
            write_json(self.at(rel), doc, self.so)
        else:
            from .._io import write_json as wj

            wj(self.at(rel), doc)

    def digest(self, rel: str) -> str:
        if self.remote:
            return "sha256:" + digest(self.at(rel), self.so)
        from .._io import file_digest

        return "sha256:" + file_digest(self.at(rel))

    def check_digest(self, rel: str, expected: str, *, recorded_in: str) -> None:
        if self.remote:
            check_digest(self.at(rel), expected, self.so, recorded_in=recorded_in)
        else:
            from .._io import check_digest as cd

            cd(self.at(rel), expected, recorded_in=recorded_in)

    def remove(self, rel: str) -> None:
        if self.remote:
            remove(self.at(rel), self.so)
            return
        import shutil

        p = Path(self.at(rel))
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        elif os.path.lexists(p):
            p.unlink()

    def find(self, rel: str, suffixes: Sequence[str]) -> list[str]:
        """Relative names of the files under ``rel`` with one of ``suffixes`` (none when it is absent)."""
        if self.remote:
            base = self.at(rel)
            fs, p = filesystem(base, self.so)
            if not fs.isdir(p):
                return []
            return [rel.rstrip("/") + "/" + u[len(base):].strip("/") for u in find(base, suffixes, self.so)]
        base_p = Path(self.at(rel))
        if not base_p.is_dir():
            return []
        return sorted((Path(rel) / f.relative_to(base_p)).as_posix() for f in base_p.rglob("*")
                      if f.is_file() and f.suffix.lower() in suffixes)

    def mkdir(self) -> None:
        if not self.remote:
            Path(self.root).mkdir(parents=True, exist_ok=True)
