"""Import-only stand-ins for vLLM's CUDA flash-attention pieces on the oracle's CPU install:
vllm.vllm_flash_attn refuses to import without _vllm_fa2_C or _vllm_fa3_C, and
vllm/v1/attention/backends/fa_utils.py defines its kernel names only on CUDA, so model packages
that import them at module level (vllm/models/dots3_note) could not be inspected or imported.
Planning never calls a kernel: the names are inert placeholders, set only where vLLM left them
undefined; Dots3's vision tower alone gets a stand-in for the vendored DeepGEMM (whose extension
does not load on CPU), so nothing else sees it. Only `make oracle` puts this on PYTHONPATH
(Python imports a sitecustomize module at start-up, the model registry's inspection subprocess
included)."""

import importlib.abc
import importlib.machinery
import sys
import types

for _name in ("vllm.vllm_flash_attn._vllm_fa2_C", "vllm.vllm_flash_attn._vllm_fa3_C"):
    sys.modules.setdefault(_name, types.ModuleType(_name))

_MISSING = {
    "vllm.v1.attention.backends.fa_utils": (
        "compile_flash_attn_varlen_func_from_specs",
        "flash_attn_varlen_func",
        "get_scheduler_metadata",
        "reshape_and_cache_flash",
    ),
}


def _placeholder(*args, **kwargs):
    raise RuntimeError("a CUDA kernel stand-in of the oracle's CPU install was called")


class _Loader(importlib.abc.Loader):
    def __init__(self, inner):
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        for name in _MISSING[module.__name__]:
            if not hasattr(module, name):
                setattr(module, name, _placeholder)


_DEEP_GEMM = "vllm.third_party.deep_gemm"
_DEEP_GEMM_FOR = "/vllm/models/dots3_note/"


class _DeepGemmStub(importlib.abc.Loader):
    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.per_block_cast_to_fp8 = _placeholder


def _imported_by(part):
    frame = sys._getframe(2)
    while frame is not None:
        if part in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname == _DEEP_GEMM and _imported_by(_DEEP_GEMM_FOR):
            return importlib.machinery.ModuleSpec(fullname, _DeepGemmStub())
        if fullname not in _MISSING:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


sys.meta_path.insert(0, _Finder())
