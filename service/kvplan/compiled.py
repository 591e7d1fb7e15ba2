"""The simulator's hot modules compiled with mypyc, used when built and fresh.

The scheduler's step loop, its block pools, decode runs and the figures it gathers per step cost
Python a few µs a visit; compiled by mypyc (mypy's compiler, from the same strictly typed source)
they run 1.5–2.5× faster, which is what the capacity searches of issue #29 need. The Python source
stays the reference: a build is used only when every module's source is byte for byte the one it
was compiled from, `KVPLAN_COMPILED=0` turns it off, and the tests compare the two on a corpus of
workloads (tests/sim/test_compiled.py).

`kvplan compiled build` (run by `make`) compiles MODULES into `_compiled/` beside this file, with
a manifest of their sources' hashes; a build that is already fresh is left alone. `kvplan compiled
status` says which simulator a process runs. `install()`,
called when kvplan is imported, puts a finder for the built modules first on sys.meta_path.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

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
GROUP = "kvplan_sim"  # mypyc's shared library for the group: kvplan_sim__mypyc
PACKAGE_DIR = Path(__file__).resolve().parent
BUILD_DIR = Path(os.environ.get("KVPLAN_COMPILED_DIR") or PACKAGE_DIR / "_compiled")
MANIFEST = "manifest.json"
OFF = ("0", "off", "false", "no")

# What install() found: "compiled …" or "pure Python: why". Read by `kvplan serve`'s start-up log.
STATUS = "pure Python: not looked for yet"


def source_path(module: str) -> Path:
    return PACKAGE_DIR.joinpath(*module.split(".")[1:]).with_suffix(".py")


def source_hashes() -> dict[str, str]:
    return {m: hashlib.sha256(source_path(m).read_bytes()).hexdigest() for m in MODULES}


def _mypy_version() -> str:
    from mypy.version import __version__

    return __version__


def check(build_dir: Path = BUILD_DIR) -> tuple[dict[str, Path] | None, str]:
    """The built modules' files by name, if the build in build_dir is complete and fresh; else None
    and why not."""
    try:
        manifest = json.loads((build_dir / MANIFEST).read_text())
    except (OSError, ValueError):
        return None, f"no compiled build in {build_dir} (make compiled builds it)"
    if manifest.get("cache_tag") != sys.implementation.cache_tag:
        return None, f"the build is for {manifest.get('cache_tag')}, this is {sys.implementation.cache_tag}"
    if manifest.get("modules") != list(MODULES):
        return None, "the build compiled other modules than kvplan.compiled.MODULES lists"
    stale = [m for m, h in source_hashes().items() if manifest["sources"].get(m) != h]
    if stale:
        return None, f"the build is stale: {', '.join(stale)} changed since (make compiled rebuilds it)"
    files = {name: build_dir / rel for name, rel in manifest["files"].items()}
    missing = [str(f) for f in files.values() if not f.is_file()]
    if missing:
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
    """Use the compiled modules from now on, if built, fresh and not turned off; returns STATUS.
    Called before any of MODULES is imported (kvplan/__init__.py), so no one holds the source's."""
    global STATUS
    if os.environ.get("KVPLAN_COMPILED", "").lower() in OFF:
        STATUS = "pure Python: KVPLAN_COMPILED is off"
        return STATUS
    loaded = [m for m in MODULES if m in sys.modules]
    if loaded:
        STATUS = f"pure Python: {loaded[0]} was imported before kvplan.compiled.install()"
        return STATUS
    files, STATUS = check()
    if files is not None and not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder(files))
    return STATUS


def active() -> bool:
    """Whether the simulator this process runs is the compiled one (its scheduler is imported)."""
    from kvplan.core.sim import scheduler

    return not (scheduler.__file__ or "").endswith(".py")


def build(build_dir: Path = BUILD_DIR) -> str:
    """Compile MODULES into build_dir unless the build there is fresh; returns what it did."""
    files, why = check(build_dir)
    if files is not None:
        return f"fresh: {why}"
    from mypyc.build import mypycify
    from setuptools import setup

    with tempfile.TemporaryDirectory(prefix="kvplan-mypyc-") as tmp:
        # The package's Python files alone, copied: mypy reads what the modules import from there,
        # and nothing else of an installed package's directory (site-packages' other modules).
        root = Path(tmp) / "src"
        py_only = shutil.ignore_patterns("_compiled", "__pycache__", "*.so", "data", "web")
        shutil.copytree(PACKAGE_DIR, root / PACKAGE_DIR.name, ignore=py_only)
        out = Path(tmp) / "out"
        here = Path.cwd()
        os.chdir(root)  # mypyc names a module by its path from here
        try:
            paths = [str(source_path(m).relative_to(PACKAGE_DIR.parent)) for m in MODULES]
            # Errors only in the compiled modules (make lint type-checks the rest); no cache beside them.
            options = ["--follow-imports=silent", f"--cache-dir={tmp}/mypy-cache"]
            extensions = mypycify(paths + options, opt_level="3", group_name=GROUP, target_dir=f"{tmp}/c")
            build_ext = ["build_ext", "--build-lib", str(out), "--build-temp", f"{tmp}/o"]
            setup(name="kvplan-compiled", ext_modules=extensions, script_args=["-q", *build_ext])
        finally:
            os.chdir(here)
        built = {
            (GROUP + "__mypyc" if p.name.startswith(GROUP) else _module_name(p.relative_to(out))): p
            for p in out.rglob("*.so")
        }
        if missing := set(MODULES) - set(built):
            raise SystemExit(f"mypyc built no module for {sorted(missing)}")
        shutil.rmtree(build_dir, ignore_errors=True)
        build_dir.mkdir(parents=True)
        for p in built.values():
            dest = build_dir / p.relative_to(out)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, dest)
        manifest = {
            "cache_tag": sys.implementation.cache_tag,
            "mypy": _mypy_version(),
            "modules": list(MODULES),
            "sources": source_hashes(),
            "files": {name: str(p.relative_to(out)) for name, p in sorted(built.items())},
        }
        (build_dir / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    files, why = check(build_dir)
    if files is None:
        raise SystemExit(f"the build did not take: {why}")
    return f"built: {why}"


def _module_name(rel: Path) -> str:
    """kvplan/core/sim/scheduler.cpython-311-x86_64-linux-gnu.so → kvplan.core.sim.scheduler"""
    return ".".join((*rel.parent.parts, rel.name.split(".", 1)[0]))
