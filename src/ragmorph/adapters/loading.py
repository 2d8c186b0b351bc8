"""load_retriever: resolve an import string `package.module:attr` to a retriever or a factory."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from ..errors import UsageError, describe
from .capabilities import is_factory, is_retriever
from .function import FunctionRetriever, positional_arity

__all__ = ["load_retriever"]


def load_retriever(spec: str) -> Any:
    """Import `spec` ("package.module:attr", attr may be dotted) and return the retriever or factory it names.

    A class whose constructor takes the corpus, or a one-argument callable, is a factory; an object with
    `retrieve`/`aretrieve` is a retriever; a plain function `fn(query, k[, filters])` is wrapped in
    FunctionRetriever. Anything else is a UsageError naming the string and what went wrong.
    """
    if not isinstance(spec, str) or spec.count(":") != 1:
        raise UsageError(
            f"expected a retriever import string 'package.module:attr', got {describe(spec)}; "
            "e.g. 'ragmorph.adapters:BM25Retriever'"
        )
    module_name, attr_path = (part.strip() for part in spec.split(":"))
    if not module_name or not attr_path:
        raise UsageError(f"expected both a module and an attribute in 'package.module:attr', got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name and (module_name == error.name or module_name.startswith(error.name + ".")):
            raise UsageError(
                f"retriever {spec!r}: module {module_name!r} not found (missing {error.name!r}); check the spelling "
                "and that its folder is on PYTHONPATH"
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
    target: Any = module
    walked = module_name
    for part in attr_path.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            public = sorted(n for n in dir(target) if not n.startswith("_"))[:12]
            raise UsageError(
                f"retriever {spec!r}: {walked!r} has no attribute {part!r}; it has {public}"
            ) from None
        walked = f"{walked}.{part}" if walked != module_name else f"{module_name}:{part}"
    if is_retriever(target) or is_factory(target):
        return target
    arity = positional_arity(target) if callable(target) and not inspect.isclass(target) else None
    if arity is not None and arity[0] in (2, 3):
        return FunctionRetriever(target)
    raise UsageError(
        f"retriever {spec!r}: expected a retriever (object with retrieve(query, *, k, filters)), a factory (class or "
        f"callable taking the corpus) or a function fn(query, k[, filters]), got {describe(target)}"
    )
