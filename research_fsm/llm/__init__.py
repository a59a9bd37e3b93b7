"""The LLM seam: the protocol the agents use, its replies, token budgets, Claude
(``AnthropicLLM``) and a scripted test double."""

from ._anthropic import (
    DEFAULT_MODEL,
    LOCAL_KEY,
    MAX_TOKENS,
    MODEL_ENV,
    PRICES,
    AnthropicLLM,
    LLMCheck,
    Price,
)
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
from ._env import (
    CLAUDE_TIMEOUT,
    LLM_TIMEOUT_ENV,
    LLM_URL_ENV,
    LOCAL_TIMEOUT,
    LLMSettings,
    llm_from_env,
    llm_settings,
)
from ._schema import keep_first
from ._scripted import ScriptedCall, ScriptedLLM
from ._tokens import Budgeted, fit_to_budget

__all__ = [
    "CLAUDE_TIMEOUT",
    "DEFAULT_MODEL",
    "LLM",
    "LLM_TIMEOUT_ENV",
    "LLM_URL_ENV",
    "LOCAL_KEY",
    "LOCAL_TIMEOUT",
    "MAX_TOKENS",
    "MODEL_ENV",
    "PRICES",
    "Agent",
    "AnthropicLLM",
    "Budgeted",
    "LLMCheck",
    "LLMError",
    "LLMErrorKind",
    "LLMSettings",
    "Price",
    "ScriptedCall",
    "ScriptedLLM",
    "StructuredReply",
    "TextReply",
    "Usage",
    "agent_models",
    "fit_to_budget",
    "keep_first",
    "llm_from_env",
    "llm_settings",
    "models_text",
]
