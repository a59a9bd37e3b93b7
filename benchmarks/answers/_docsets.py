"""Real documentation sets installed from a registry package at evaluation time.

Each set is described by ``sets/<name>.json``: its shape, language, the fixed rule that
chooses its files, and its sources, each a Debian package (``apt-get download`` of the pinned
version, unpacked with ``dpkg-deb -x``; ``root`` and ``include`` globs pick the files, a
``.gz`` is unpacked) or a PyPI wheel (``pip download``; its README, the METADATA long
description, becomes ``<package>.md``). A built set is cached under ``$RESEARCH_FSM_DOCSETS``
(default ``~/.cache/research-fsm/docsets``) in a folder named by the set and a hash of its
sources, with ``MANIFEST.json`` written last: a set is complete only when that file is there.
``ensure`` with ``offline=True`` never downloads: a set not cached is reported missing."""

from __future__ import annotations

import email
import email.policy
import fnmatch
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

__all__ = ["DocSet", "SetUnavailable", "cache_root", "ensure", "load_sets"]

SETS_DIR: Final = Path(__file__).resolve().parent / "sets"


class SetUnavailable(Exception):
    """A set is not cached and could not (or may not) be fetched."""


@dataclass(frozen=True, slots=True)
class DocSet:
    """One documentation set as its JSON file describes it."""

    name: str
    shape: str
    language: str
    rule: str
    sources: tuple[dict[str, Any], ...]
    spec: dict[str, Any] = field(repr=False)

    @property
    def key(self) -> str:
        """Its cache folder name: the name and a hash of its sources."""
        digest = hashlib.sha256(json.dumps(self.spec["sources"], sort_keys=True).encode())
        return f"{self.name}-{digest.hexdigest()[:12]}"


def load_sets(folder: Path = SETS_DIR) -> dict[str, DocSet]:
    """Every set of ``folder``, by name, in name order."""
    sets = {}
    for path in sorted(folder.glob("*.json")):
        spec = json.loads(path.read_text(encoding="utf-8"))
        sets[spec["name"]] = DocSet(
            name=spec["name"],
            shape=spec["shape"],
            language=spec["language"],
            rule=spec["rule"],
            sources=tuple(spec["sources"]),
            spec=spec,
        )
    return sets


def cache_root() -> Path:
    """Where built sets are kept."""
    configured = os.environ.get("RESEARCH_FSM_DOCSETS")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "research-fsm" / "docsets"


def cached(docset: DocSet, root: Path | None = None) -> Path | None:
    """The built set's ``docs`` folder when it is complete in the cache, else ``None``."""
    folder = (root or cache_root()) / docset.key
    return folder / "docs" if (folder / "MANIFEST.json").is_file() else None


def manifest(docset: DocSet, root: Path | None = None) -> dict[str, Any]:
    """The cached set's manifest (sources with the versions fetched, file count)."""
    folder = (root or cache_root()) / docset.key
    data: dict[str, Any] = json.loads((folder / "MANIFEST.json").read_text(encoding="utf-8"))
    return data


def _run(args: list[str], cwd: Path) -> None:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=900)
    if done.returncode:
        raise SetUnavailable(f"{' '.join(args)} failed: {done.stderr.strip()[-400:]}")


def _matches(relative: str, patterns: list[str]) -> bool:
    for pattern in patterns:
        if fnmatch.fnmatchcase(relative, pattern):
            return True
        if "/**/" in pattern and fnmatch.fnmatchcase(relative, pattern.replace("/**/", "/")):
            return True
    return False


def _debian(source: dict[str, Any], work: Path, docs: Path) -> dict[str, Any]:
    package, version = source["package"], source["version"]
    fetched = work / "deb"
    fetched.mkdir(exist_ok=True)
    for old in fetched.glob("*.deb"):
        old.unlink()
    try:
        _run(["apt-get", "download", f"{package}={version}"], fetched)
        got = version
    except SetUnavailable:  # the pinned version is gone from the archive: the current one
        _run(["apt-get", "download", package], fetched)
        got = "current (pinned version not in the archive)"
    deb = next(fetched.glob("*.deb"))
    tree = work / "tree" / package
    if not tree.exists():
        tree.parent.mkdir(parents=True, exist_ok=True)
        _run(["dpkg-deb", "-x", str(deb), str(tree)], work)
    base = tree / source["root"]
    target = docs / source.get("to", "")
    count = 0
    for path in sorted(base.rglob("*")):
        relative = path.relative_to(base).as_posix()
        if not path.is_file() or not _matches(relative, source["include"]):
            continue
        name = relative[:-3] if relative.endswith(".gz") else relative
        out = target / name
        out.parent.mkdir(parents=True, exist_ok=True)
        data = path.read_bytes()
        out.write_bytes(gzip.decompress(data) if relative.endswith(".gz") else data)
        count += 1
    return {"registry": "debian", "package": package, "version": got, "files": count}


def _pypi(source: dict[str, Any], work: Path, docs: Path) -> dict[str, Any]:
    package, version = source["package"], source["version"]
    fetched = work / "whl" / package
    fetched.mkdir(parents=True, exist_ok=True)
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--platform",
            "any",
            "--python-version",
            "3.11",
            "-d",
            str(fetched),
            f"{package}=={version}",
        ],
        work,
    )
    wheel = next(fetched.glob("*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        message = email.message_from_bytes(archive.read(name), policy=email.policy.compat32)
    body = message.get_payload()
    text = body if isinstance(body, str) else ""
    (docs / f"{package}.md").write_text(text.strip() + "\n", encoding="utf-8")
    return {"registry": "pypi", "package": package, "version": version, "files": 1}


def ensure(docset: DocSet, *, offline: bool, root: Path | None = None) -> Path:
    """The set's ``docs`` folder, built into the cache first unless ``offline``.

    Raises ``SetUnavailable`` (naming the set and why) when it is not cached and ``offline``
    is set or a download fails."""
    found = cached(docset, root)
    if found is not None:
        return found
    if offline:
        raise SetUnavailable(f"set {docset.name!r} is not cached (offline: not fetched)")
    base = root or cache_root()
    base.mkdir(parents=True, exist_ok=True)
    folder = base / docset.key
    shutil.rmtree(folder, ignore_errors=True)
    docs = folder / "docs"
    docs.mkdir(parents=True)
    fetched = []
    with tempfile.TemporaryDirectory(prefix=f"docset-{docset.name}-") as temp:
        work = Path(temp)
        for source in docset.sources:
            if source["registry"] == "debian":
                fetched.append(_debian(source, work, docs))
            elif source["registry"] == "pypi":
                fetched.append(_pypi(source, work, docs))
            else:
                raise SetUnavailable(
                    f"set {docset.name!r}: registry {source['registry']!r} is not one of"
                    " 'debian', 'pypi'"
                )
    files = sum(1 for p in docs.rglob("*") if p.is_file())
    record = {"name": docset.name, "sources": fetched, "files": files}
    (folder / "MANIFEST.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
    return docs
