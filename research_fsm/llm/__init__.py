"""The LLM seam: the protocol the agents use, its replies, and a scripted test double."""

from ._base import LLM, LLMError, LLMErrorKind, StructuredReply, TextReply, Usage
from ._scripted import ScriptedCall, ScriptedLLM

__all__ = [
    "LLM",
    "LLMError",
    "LLMErrorKind",
    "ScriptedCall",
    "ScriptedLLM",
    "StructuredReply",
    "TextReply",
    "Usage",
]
