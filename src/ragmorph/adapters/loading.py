"""load_retriever: resolve `package.module:attr` or `path/to/file.py:attr` to a retriever or a factory.

A file spec is imported as a module of its own with the file's folder on `sys.path`, so an adapter file can
import the modules next to it (`from wiki_search import ...`) exactly as it would when run as a script.
`locate_retriever` says how a fresh process finds the same retriever again (replay files record it).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from ..errors import UsageError, describe
from .capabilities import is_factory, is_retriever
from .function import FunctionRetriever, positional_arity

__all__ = ["Configured", "is_file_spec", "load_retriever", "locate_retriever"]

_FILE_MODULE_PREFIX = "_ragmorph_file_"


def is_file_spec(spec: str) -> bool:
    """True when `spec` names a Python file (`path/to/file.py:attr`) rather than a module."""
    target = spec.rpartition(":")[0]
    return target.endswith(".py") or "/" in target or "\\" in target


def _file_module(path: Path, spec: str) -> str:
    """Import the file `path` (once per process) with its folder on sys.path; return its module name."""
    if not path.is_file():
        raise UsageError(f"retriever {spec!r}: expected an existing Python file, got no file at {str(path)!r}")
    resolved = path.resolve()
    # A stable name per file: the same file loads once per process, and reports name it the same way.
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:10]
    name = f"{_FILE_MODULE_PREFIX}{resolved.stem.replace('-', '_').replace('.', '_')}_{digest}"
    if name in sys.modules:
        return name
    folder = str(resolved.parent)
    if folder not in sys.path:
        # Appended, not prepended: the user's folder must not shadow installed packages of the same name.
        sys.path.append(folder)
    module_spec = importlib.util.spec_from_file_location(name, resolved)
    if module_spec is None or module_spec.loader is None:
        raise UsageError(f"retriever {spec!r}: expected an importable Python file, got {str(path)!r}")
    module = importlib.util.module_from_spec(module_spec)
    # Registered before exec so dataclasses/attrs/pickle inside the file can find their own module.
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except ModuleNotFoundError as error:
        del sys.modules[name]
        raise UsageError(
            f"retriever {spec!r}: importing {str(path)!r} failed: no module named {error.name!r}; the file's "
            f"folder {folder!r} is on sys.path, so install {error.name!r} or put it on PYTHONPATH"
        ) from error
    except KeyboardInterrupt:
        del sys.modules[name]
        raise
    except BaseException as error:  # SystemExit too: a file calling sys.exit() must not end ragmorph quietly
        del sys.modules[name]
        raise UsageError(f"retriever {spec!r}: importing {str(path)!r} failed: {type(error).__name__}: {error}") from error
    return name


def _import(module_name: str, spec: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name and (module_name == error.name or module_name.startswith(error.name + ".")):
            raise UsageError(
                f"retriever {spec!r}: module {module_name!r} not found (missing {error.name!r}); check the spelling "
                "and that its folder is on PYTHONPATH, or name the file instead: 'path/to/file.py:attr'"
            ) from error
        raise UsageError(
            f"retriever {spec!r}: importing {module_name!r} failed because it imports the missing module "
            f"{error.name!r}; install it"
        ) from error
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit too: a module calling sys.exit() must not end ragmorph quietly
        raise UsageError(
            f"retriever {spec!r}: importing {module_name!r} raised {type(error).__name__}: {error}"
        ) from error


def _lookup(spec: str) -> Any:
    """The object `spec` names, as it is (no wrapping): the import and attribute walk of load_retriever."""
    if not isinstance(spec, str) or ":" not in spec:
        raise UsageError(
            f"expected a retriever as 'package.module:attr' or 'path/to/file.py:attr', got {describe(spec)}; "
            "e.g. 'ragmorph.adapters:BM25Retriever'"
        )
    target_text, _, attr_path = (part.strip() for part in spec.rpartition(":"))
    if not target_text or not attr_path:
        raise UsageError(f"expected both a module and an attribute (or a file and an attribute) in {spec!r}, e.g. 'adapter.py:factory'")
    if is_file_spec(spec):
        module_name = _file_module(Path(target_text), spec)
        shown = target_text
    else:
        if ":" in target_text:
            raise UsageError(f"expected one ':' in 'package.module:attr', got {spec!r}")
        module_name, shown = target_text, target_text
    target: Any = _import(module_name, spec)
    walked = shown
    for part in attr_path.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            public = sorted(n for n in dir(target) if not n.startswith("_"))[:12]
            raise UsageError(f"retriever {spec!r}: {walked!r} has no attribute {part!r}; it has {public}") from None
        walked = f"{walked}.{part}" if walked != shown else f"{shown}:{part}"
    return target


def _option_parameters(target: Any) -> list[str] | None:
    """The required parameters after the corpus of a factory that takes options (`factory(corpus, k1)`), else None.

    Read from the first parameter's name: a callable whose first parameter is `corpus` is a factory whatever else it
    requires, never a search function `fn(query, k)` (reading it as one failed every call with a confusing error).
    """
    if not callable(target) or is_retriever(target):
        return None
    try:
        parameters = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return None
    if not parameters or parameters[0].name != "corpus" or parameters[0].kind is parameters[0].KEYWORD_ONLY:
        return None
    empty = inspect.Parameter.empty
    return [p.name for p in parameters[1:] if p.default is empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def load_retriever(spec: str) -> Any:
    """Import `spec` ("package.module:attr" or "path/to/file.py:attr", attr may be dotted); return what it names.

    A class whose constructor takes the corpus, or a one-argument callable, is a factory; an object with
    `retrieve`/`aretrieve` is a retriever; a plain function `fn(query, k[, filters])` is wrapped in
    FunctionRetriever. A factory that requires options (`factory(corpus, k1)`) needs them given
    (`Configured(spec, options)`, the config's `options` table). Anything else is a UsageError naming the string
    and what went wrong.
    """
    target = _lookup(spec)
    if is_retriever(target) or is_factory(target):
        return target
    needed = _option_parameters(target)
    if needed:
        raise UsageError(
            f"retriever {spec!r}: expected a factory taking the corpus, got {describe(target)}, which also requires "
            f"{', '.join(needed)}; give them as options (in the config: options = {{ {needed[0]} = ... }})"
        )
    arity = positional_arity(target) if callable(target) and not inspect.isclass(target) else None
    if arity is not None and arity[0] in (2, 3):
        return FunctionRetriever(target)
    raise UsageError(
        f"retriever {spec!r}: expected a retriever (object with retrieve(query, *, k, filters)), a factory (class or "
        f"callable taking the corpus) or a function fn(query, k[, filters]), got {describe(target)}"
    )


@attrs.frozen
class Configured:
    """A factory named by import spec plus keyword options: `Configured(spec, options)(corpus)` builds
    `factory(corpus, **options)`. Picklable, and replay files record both so a fresh process builds the same."""

    spec: str
    options: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)

    def factory(self) -> Any:
        """The factory the spec names, checked to accept the corpus and exactly these options (else UsageError)."""
        factory = _lookup(self.spec)
        if is_retriever(factory) or not callable(factory):
            raise UsageError(
                f"retriever {self.spec!r}: expected a factory (a class or callable taking the corpus) to pass "
                f"options {sorted(self.options)} to, got a retriever object; drop the options or name its factory"
            )
        try:
            signature = inspect.signature(factory)
        except (TypeError, ValueError):
            return factory  # no signature to check against: the call itself will tell
        try:
            signature.bind(None, **self.options)
        except TypeError as error:
            raise UsageError(
                f"retriever {self.spec!r}: expected options that {getattr(factory, '__name__', 'the factory')}"
                f"{signature} accepts after the corpus, got options {sorted(self.options)}: {error}"
            ) from None
        return factory

    def __call__(self, corpus: Any) -> Any:
        """Build the retriever over `corpus` with the options."""
        return self.factory()(corpus, **self.options)


def locate_retriever(target: Any) -> dict[str, Any]:
    """How another process loads `target` again: {"spec": import string, "file": absolute `file.py:attr`}.

    `spec` is the import string the user gave (or `module:qualname` for a module-level class or function);
    `file` names the source file absolutely, so a replay works from any folder. Either may be None (an object
    built at run time cannot be found again).
    """
    if isinstance(target, Configured):
        return {**locate_retriever(target.spec), "options": dict(target.options)}
    if isinstance(target, str):
        if is_file_spec(target):
            path, _, attr = target.rpartition(":")
            return {"spec": target, "file": f"{Path(path).resolve()}:{attr}"}
        return {"spec": target, "file": _source_file(sys.modules.get(target.rpartition(":")[0]), target.rpartition(":")[2])}
    if not (inspect.isclass(target) or inspect.isfunction(target)) or "<locals>" in target.__qualname__:
        return {"spec": None, "file": None}
    module = sys.modules.get(target.__module__)
    qualname = target.__qualname__
    spec = None
    if module is not None and not target.__module__.startswith(_FILE_MODULE_PREFIX) and target.__module__ != "__main__":
        spec = f"{target.__module__}:{qualname}"
    return {"spec": spec, "file": _source_file(module, qualname)}


def _source_file(module: Any, attr: str) -> str | None:
    path = getattr(module, "__file__", None)
    return f"{Path(path).resolve()}:{attr}" if path and str(path).endswith(".py") else None
