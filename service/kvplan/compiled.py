"""The simulator's hot modules compiled with mypyc, used when built and fresh.

The scheduler's step loop, its block pools, decode runs and the figures it gathers per step cost
Python a few µs a visit; compiled by mypyc (mypy's compiler, from the same strictly typed source)
they run about twice as fast (1.7–2.7× in `make bench`), which the capacity searches of issue
#29 need. The Python source
stays the reference: a build is used only while every file it was compiled from (the compiled
modules and every kvplan module they import, directly or not) is byte for byte the same,
`KVPLAN_COMPILED=0` turns it off, and the tests compare the two on a corpus of workloads
(tests/sim/test_compiled.py).

`kvplan compiled build` (run by `make`) compiles MODULES into `_compiled/` beside this file, with
a manifest of the sources' hashes; a build that is already fresh is left alone. `install()`,
called when kvplan is imported, loads the built modules if fresh, and else leaves the source to
be imported; `kvplan compiled status` says which one a process runs, and why.
"""

from __future__ import annotations

import ast
import fcntl
import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

# The modules the simulation loop spends its time in, and what they import that is cheap to compile.
# The rest of the simulator (simulate, workload, traces, steptime) holds msgspec Structs, which mypyc
# does not compile, or runs once per answer.
MODULES = (
    "kvplan.core.units",
    "kvplan.core.sim.states",
    "kvplan.core.sim.request",
    "kvplan.core.sim.keys",
    "kvplan.core.sim.clock",
    "kvplan.core.sim.frontend",
    "kvplan.core.sim.blockpool",
    "kvplan.core.sim.anonpool",
    "kvplan.core.sim.runs",
    "kvplan.core.sim.latency",
    "kvplan.core.sim.series",
    "kvplan.core.sim.scheduler",
)
GROUP = "kvplan_sim__mypyc"  # the shared library mypyc builds for the group "kvplan_sim"
PACKAGE_DIR = Path(__file__).resolve().parent
BUILD_DIR = Path(os.environ.get("KVPLAN_COMPILED_DIR") or PACKAGE_DIR / "_compiled").absolute()
MANIFEST = "manifest.json"
OFF = ("0", "off", "false", "no")
EXT_SUFFIX = str(sysconfig.get_config_var("EXT_SUFFIX"))  # the interpreter, its ABI and the machine

# What install() found: "compiled …" or "pure Python: why". Logged at the service's start-up.
STATUS = "pure Python: not looked for yet"


class BuildError(Exception):
    """The build could not be made; the message says why and what to do."""


def _path(module: str, root: Path) -> Path:
    """kvplan.core.sim.scheduler → root/kvplan/core/sim/scheduler.py (or a package's __init__.py)."""
    base = root.joinpath(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def _imports(module: str, root: Path) -> Iterator[str]:
    """The kvplan modules `module` imports (relative or absolute), as names."""
    is_package = _path(module, root).name == "__init__.py"
    for node in ast.walk(ast.parse(_path(module, root).read_bytes())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            parts = module.split(".")[: len(module.split(".")) - node.level + is_package]
            base = ".".join([*parts, node.module] if node.module else parts) if node.level else node.module
            # `from . import runs` names a module; `from .x import a` names what x holds
            names = [base or "", *(f"{base}.{a.name}" for a in node.names)]
        else:
            continue
        for name in names:
            if name and name.split(".")[0] == "kvplan" and _path(name, root).is_file():
                yield name


def dependencies(root: Path = PACKAGE_DIR.parent) -> list[str]:
    """MODULES and every kvplan module they import, directly or not (what the build depends on:
    mypyc compiles a NamedTuple's fields by position and a Final constant by value)."""
    seen: set[str] = set()
    todo = list(MODULES)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(_imports(name, root))
    return sorted(seen)


def _hash(module: str, root: Path) -> str:
    return hashlib.sha256(_path(module, root).read_bytes()).hexdigest()


def check(build_dir: Path = BUILD_DIR) -> tuple[dict[str, Path] | None, str]:
    """The built modules' files by name, if the build in build_dir is complete and fresh for this
    interpreter; else None and why not."""
    try:
        manifest = json.loads((build_dir / MANIFEST).read_text())
    except (OSError, ValueError):
        return None, f"no compiled build in {build_dir} (make compiled builds it)"
    try:
        return _fresh(build_dir, manifest)
    except (AttributeError, KeyError, TypeError, ValueError, OSError) as e:
        return None, f"the build's manifest is not one kvplan wrote ({type(e).__name__}: {e})"


def _fresh(build_dir: Path, manifest: Any) -> tuple[dict[str, Path] | None, str]:
    if manifest["ext_suffix"] != EXT_SUFFIX:
        return None, f"the build is for {manifest['ext_suffix']}, this interpreter loads {EXT_SUFFIX}"
    if manifest["modules"] != list(MODULES):
        return None, "the build compiled other modules than kvplan.compiled.MODULES lists"
    if build_dir.stat().st_mode & 0o002:
        return None, f"{build_dir} is writable by anyone: its code is not loaded"
    root = PACKAGE_DIR.parent
    sources: dict[str, str] = manifest["sources"]
    if stale := sorted(m for m, h in sources.items() if not _path(m, root).is_file() or _hash(m, root) != h):
        return None, f"the build is stale: {', '.join(stale)} changed since (make compiled rebuilds it)"
    files = {name: (build_dir / rel).resolve() for name, rel in manifest["files"].items()}
    inside = all(f.is_relative_to(build_dir.resolve()) for f in files.values())
    if set(files) != {*MODULES, GROUP} or not inside:
        return None, "the build's manifest names other files than the compiled modules"
    if missing := [str(f) for f in files.values() if not f.is_file()]:
        return None, f"the build is incomplete: {missing[0]} is missing"
    return files, f"compiled by mypyc {manifest['mypy']} ({len(MODULES)} modules, {build_dir})"


class _Finder(importlib.abc.MetaPathFinder):
    """Finds the compiled modules (and their shared library) in the build, before the source."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        file = self.files.get(fullname)
        return None if file is None else importlib.util.spec_from_file_location(fullname, file)


def install() -> str:
    """Load the compiled modules, if built, fresh and not turned off; returns STATUS. Called
    before any of MODULES is imported (kvplan/__init__.py). All of them are loaded here, so that a
    build that will not load (another machine's, a file cut short) leaves the source in use, not
    a mix of the two."""
    global STATUS
    if os.environ.get("KVPLAN_COMPILED", "").lower() in OFF:
        STATUS = "pure Python: KVPLAN_COMPILED is off"
        return STATUS
    if loaded := [m for m in MODULES if m in sys.modules]:
        STATUS = f"pure Python: {loaded[0]} was imported before kvplan.compiled.install()"
        return STATUS
    files, why = check()
    STATUS = why if files is not None else f"pure Python: {why}"
    if files is None or any(isinstance(f, _Finder) for f in sys.meta_path):
        return STATUS
    finder = _Finder(files)
    sys.meta_path.insert(0, finder)
    try:
        for name in (GROUP, *MODULES):
            importlib.import_module(name)
    except Exception as e:  # whatever a foreign or broken extension raises: the source runs instead
        sys.meta_path.remove(finder)
        for name in (GROUP, *MODULES):
            sys.modules.pop(name, None)
        STATUS = f"pure Python: the compiled build in {BUILD_DIR} would not load ({type(e).__name__}: {e})"
    return STATUS


def active() -> bool:
    """Whether the simulator this process runs is the compiled one (its scheduler is imported)."""
    from kvplan.core.sim import scheduler

    return not (scheduler.__file__ or "").endswith(".py")


def _can_compile() -> str | None:
    """Why this machine cannot compile C extensions for this interpreter, or None."""
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc) is None:
        return f"no C compiler ({cc}): install gcc (make compiler-deps does, as root)"
    header = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not header.is_file():
        return f"no {header}: install Python's headers (python3-dev; make compiler-deps does, as root)"
    return None


@contextmanager
def _locked(build_dir: Path) -> Iterator[None]:
    """One build at a time into build_dir (two `make` runs at once wait for each other): a lock on
    the directory that holds it, which leaves no lock file behind."""
    build_dir.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(build_dir.parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def build(build_dir: Path = BUILD_DIR) -> str:
    """Compile MODULES into build_dir unless the build there is fresh; returns what it did. The
    new build replaces the old at once (a rename), so a process starting meanwhile sees either."""
    with _locked(build_dir):
        files, why = check(build_dir)
        if files is not None:
            return f"fresh: {why}"
        if (reason := _can_compile()) is not None:
            raise BuildError(f"cannot build the compiled simulator: {reason}")
        if build_dir.exists() and not (build_dir / MANIFEST).is_file() and any(build_dir.iterdir()):
            raise BuildError(f"{build_dir} holds something other than a kvplan build: not replacing it")
        with tempfile.TemporaryDirectory(prefix=f".{build_dir.name}-", dir=build_dir.parent) as tmp:
            new = Path(tmp) / "build"
            _compile(Path(tmp), new)
            if build_dir.exists():
                build_dir.rename(Path(tmp) / "old")  # removed with tmp
            new.rename(build_dir)
    files, why = check(build_dir)
    if files is None:
        raise BuildError(f"the build did not take: {why}")
    return f"built: {why}"


def _compile(tmp: Path, into: Path) -> None:
    """mypyc on a copy of the package's Python files, the extensions and the manifest into `into`."""
    from mypy.version import __version__ as mypy_version
    from mypyc.build import mypycify
    from setuptools import setup

    # The package's Python files alone, copied: mypy reads what the modules import from there, and
    # nothing else of an installed package's directory; the hashes are of the bytes compiled.
    root = tmp / "src"
    py_only = shutil.ignore_patterns(".*", "_compiled", "__pycache__", "*.so", "data", "web")
    shutil.copytree(PACKAGE_DIR, root / PACKAGE_DIR.name, ignore=py_only)
    out = tmp / "out"
    here = Path.cwd()
    os.chdir(root)  # mypyc names a module by its path from here
    try:
        paths = [str(_path(m, Path("."))) for m in MODULES]
        # Errors only in the compiled modules (make lint type-checks the rest); no cache beside them.
        options = ["--follow-imports=silent", f"--cache-dir={tmp}/mypy-cache"]
        extensions = mypycify(paths + options, opt_level="3", group_name="kvplan_sim", target_dir=f"{tmp}/c")
        build_ext = ["build_ext", "--build-lib", str(out), "--build-temp", f"{tmp}/o"]
        setup(name="kvplan-compiled", ext_modules=extensions, script_args=["-q", *build_ext])
    finally:
        os.chdir(here)
    built = {
        (GROUP if p.name.startswith(GROUP) else _module_name(p.relative_to(out))): p
        for p in out.rglob(f"*{EXT_SUFFIX}")
    }
    if missing := {*MODULES, GROUP} - set(built):
        raise BuildError(f"mypyc built nothing for {sorted(missing)}")
    for p in built.values():
        dest = into / p.relative_to(out)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(p, dest)
    manifest = {
        "ext_suffix": EXT_SUFFIX,
        "mypy": mypy_version,
        "modules": list(MODULES),
        "sources": {m: _hash(m, root) for m in dependencies(root)},
        "files": {name: str(p.relative_to(out)) for name, p in sorted(built.items())},
    }
    (into / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")


def _module_name(rel: Path) -> str:
    """kvplan/core/sim/scheduler.cpython-311-x86_64-linux-gnu.so → kvplan.core.sim.scheduler"""
    return ".".join((*rel.parent.parts, rel.name.split(".", 1)[0]))
