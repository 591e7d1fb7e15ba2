"""An import-only stand-in for torchvision on the oracle's CPU install (the PyPI wheels do not
match its CPU torch). vLLM's multimodal model files import transformers' image processors,
which import torchvision at module level; planning never calls them. Every torchvision.*
module imports, and every name in it is an inert placeholder. Only `make oracle` puts this on
PYTHONPATH."""

import importlib.abc
import importlib.machinery
import sys
import types


class _Meta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return cls


class _Placeholder(metaclass=_Meta):
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return _Placeholder()

    def __getattr__(self, name):
        return _Placeholder()


def _module_getattr(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Placeholder


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = _module_getattr
        return module

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Finder())
__version__ = "0.0.0+oracle-stub"
__getattr__ = _module_getattr
