"""
A PEP 517 build backend in the standard library alone: the SDK has only .py files, and the machines it is
installed on may reach no package index, where setuptools (without `wheel`) cannot build a wheel.
`pip install ./clients/python` builds with this file and nothing else.
"""

from __future__ import annotations

import base64
import hashlib
import re
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
PACKAGE = "runledger"


def _project() -> dict[str, str]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = text.split("[project]", 1)[1].split("\n[", 1)[0]
    return {key: value for key, value in re.findall(r'^([a-z-]+)\s*=\s*"([^"]*)"', section, re.M)}


def _metadata() -> str:
    project = _project()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
        f"Summary: {project['description']}",
        f"Requires-Python: {project['requires-python']}",
        "License: MIT",
        "Classifier: Typing :: Typed",
        "Description-Content-Type: text/markdown",
    ]
    return "\n".join(lines) + "\n\n" + readme


def _files() -> list[Path]:
    return sorted(p for p in (ROOT / PACKAGE).rglob("*") if p.is_file() and p.suffix in (".py", ".typed"))


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(wheel_directory: str, config_settings: object = None, metadata_directory: object = None) -> str:
    project = _project()
    dist_info = f"{project['name']}-{project['version']}.dist-info"
    wheel_name = f"{project['name']}-{project['version']}-py3-none-any.whl"
    entries = [(p.relative_to(ROOT).as_posix(), p.read_bytes()) for p in _files()]
    entries.append((f"{dist_info}/METADATA", _metadata().encode()))
    entries.append((f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: runledger build_backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    record = [_record_line(name, data) for name, data in entries] + [f"{dist_info}/RECORD,,"]
    with zipfile.ZipFile(Path(wheel_directory) / wheel_name, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in entries:
            wheel.writestr(name, data)
        wheel.writestr(f"{dist_info}/RECORD", "\n".join(record) + "\n")
    return wheel_name


def build_sdist(sdist_directory: str, config_settings: object = None) -> str:
    project = _project()
    base = f"{project['name']}-{project['version']}"
    with tarfile.open(Path(sdist_directory) / f"{base}.tar.gz", "w:gz") as sdist:
        for path in [ROOT / "pyproject.toml", ROOT / "README.md", ROOT / "build_backend.py", *_files()]:
            sdist.add(path, f"{base}/{path.relative_to(ROOT).as_posix()}")
    return f"{base}.tar.gz"


def get_requires_for_build_wheel(config_settings: object = None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings: object = None) -> list[str]:
    return []
