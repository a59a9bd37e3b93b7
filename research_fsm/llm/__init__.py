"""The LLM seam: the protocol the agents use, its replies, token budgets, Claude
(``AnthropicLLM``) and a scripted test double."""

from ._anthropic import DEFAULT_MODEL, MAX_TOKENS, MODEL_ENV, PRICES, AnthropicLLM, Price
from ._base import (
    LLM,
    Agent,
    LLMError,
    LLMErrorKind,
    StructuredReply,
    TextReply,
    Usage,
    agent_models,
    models_text,
)
from ._schema import keep_first
from ._scripted import ScriptedCall, ScriptedLLM
from ._tokens import Budgeted, fit_to_budget

__all__ = [
    "DEFAULT_MODEL",
    "LLM",
    "MAX_TOKENS",
    "MODEL_ENV",
    "PRICES",
    "Agent",
    "AnthropicLLM",
    "Budgeted",
    "LLMError",
    "LLMErrorKind",
    "Price",
    "ScriptedCall",
    "ScriptedLLM",
    "StructuredReply",
    "TextReply",
    "Usage",
    "agent_models",
    "fit_to_budget",
    "keep_first",
    "models_text",
]
