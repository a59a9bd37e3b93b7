"""Find the value that makes a state unserialisable, for a useful error."""

from __future__ import annotations

from typing import Any

import pydantic_core
from pydantic import BaseModel

__all__ = ["find_unserializable"]


def _ok(value: Any) -> bool:
    try:
        pydantic_core.to_json(value, inf_nan_mode="null")
    except Exception:
        return False
    return True


def find_unserializable(value: Any, root: str) -> tuple[str, str]:
    """Return the dotted path (under ``root``) of the deepest value that fails, and why.

    ``root`` names ``value`` itself; ``"state"`` is dropped from the path so it
    reads like the model's fields (``research_findings.raw_data.when``).
    """
    path = "" if root == "state" else root
    while True:
        children: list[tuple[str, Any]]
        if isinstance(value, BaseModel):
            children = [(name, getattr(value, name)) for name in type(value).model_fields]
        elif isinstance(value, dict):
            children = [(str(k), v) for k, v in value.items()]
        elif isinstance(value, (list, tuple)):
            children = [(f"[{i}]", v) for i, v in enumerate(value)]
        else:
            return path or root, f"{type(value).__name__} is not JSON-serialisable: {value!r:.80}"
        for name, child in children:
            if not _ok(child):
                if name.startswith("["):
                    path = f"{path}{name}"
                else:
                    path = f"{path}.{name}" if path else name
                value = child
                break
        else:
            if isinstance(value, str):
                return path or root, "string is not valid unicode"
            return path or root, f"{type(value).__name__} could not be serialised"
