"""The Disk seam, enforced: storage and recovery touch the filesystem only through a Disk.

Every module of logrepair/storage and logrepair/recovery except osdisk.py (and os_copy.py, its
copying between files) is parsed (AST) and
searched for direct filesystem access. That one rule is what lets the simulator crash real code.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import logrepair

PACKAGE = Path(logrepair.__file__).parent
SEAM_PACKAGES = ("storage", "recovery")
ALLOWED = {PACKAGE / "storage" / "osdisk.py", PACKAGE / "storage" / "os_copy.py"}

# Modules whose only use in storage/recovery would be to touch files, processes or mappings.
FORBIDDEN_MODULES = {
    "os", "posix", "nt", "shutil", "mmap", "tempfile", "pathlib", "glob", "fcntl", "subprocess",
    "fileinput", "filecmp", "shelve", "dbm", "sqlite3", "importlib",
}  # fmt: skip
# Names that open files in modules that are otherwise fine to use (io.BytesIO, gzip.decompress).
FORBIDDEN_ATTRIBUTES = {
    "io": {"open", "FileIO", "open_code"},
    "codecs": {"open"},
    "gzip": {"open", "GzipFile"},
    "bz2": {"open", "BZ2File"},
    "lzma": {"open", "LZMAFile"},
    "tarfile": {"open", "TarFile"},
    "zipfile": {"ZipFile"},
    "builtins": {"open"},
}
FORBIDDEN_BUILTINS = {"open", "__import__"}


def seam_violations(path: Path) -> list[str]:
    """`file:line: what` for each direct filesystem access in the module at `path`."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[str] = []

    def report(node: ast.AST, what: str) -> None:
        found.append(f"{path.name}:{node.lineno}: {what}")

    aliases: dict[str, str] = {}  # local name → module, for `import io as x`
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top in FORBIDDEN_MODULES:
                    report(node, f"import {alias.name}")
                aliases[alias.asname or top] = top
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            top = node.module.split(".")[0]
            if top in FORBIDDEN_MODULES:
                report(node, f"from {node.module} import ...")
            for alias in node.names:
                if alias.name in FORBIDDEN_ATTRIBUTES.get(top, ()):
                    report(node, f"from {node.module} import {alias.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            module = aliases.get(node.value.id)
            if module and node.attr in FORBIDDEN_ATTRIBUTES.get(module, ()):
                report(node, f"{node.value.id}.{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in FORBIDDEN_BUILTINS:
                report(node, f"{node.func.id}(...)")
    return found


def seam_modules() -> list[Path]:
    return sorted(
        p for pkg in SEAM_PACKAGES for p in (PACKAGE / pkg).rglob("*.py") if p not in ALLOWED
    )


def test_the_seam_has_modules_to_check() -> None:
    names = {p.name for p in seam_modules()}
    assert {"disk.py", "layout.py", "offset_index.py", "scan.py"} <= names
    assert "osdisk.py" not in names


@pytest.mark.parametrize("module", seam_modules(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_direct_filesystem_access(module: Path) -> None:
    assert seam_violations(module) == []


@pytest.mark.parametrize(
    "source",
    [
        "import os\n",
        "import os.path as p\n",
        "from os import path\n",
        "import shutil\n",
        "import mmap\n",
        "import tempfile\n",
        "from pathlib import Path\n",
        "import fcntl\n",
        "import subprocess\n",
        "import importlib\n",
        "def f(p):\n    return open(p).read()\n",
        "def f(p):\n    with open(p, 'wb') as fh:\n        fh.write(b'')\n",
        "import io\ndef f(p):\n    return io.open(p)\n",
        "import io as x\ndef f(p):\n    return x.FileIO(p)\n",
        "from io import open\n",
        "import builtins\nbuiltins.open('x')\n",
        "import gzip\ngzip.open('x')\n",
        "import codecs\ncodecs.open('x')\n",
        "m = __import__('os')\n",
    ],
)
def test_a_planted_violation_is_found(tmp_path: Path, source: str) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(source)
    assert seam_violations(planted), source


def test_disk_calls_and_memory_io_are_allowed(tmp_path: Path) -> None:
    clean = tmp_path / "clean.py"
    clean.write_text(
        "import io\nimport gzip\n"
        "def f(disk, path):\n"
        "    with disk.open(path, create=True) as fh:\n"
        "        fh.write_at(0, gzip.decompress(io.BytesIO(b'').getvalue()))\n"
        "    return disk.read_file(path)\n"
    )
    assert seam_violations(clean) == []
