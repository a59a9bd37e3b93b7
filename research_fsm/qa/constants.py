"""Every threshold of the research assistant, in one place."""

from __future__ import annotations

from typing import Final

CONFIDENCE_THRESHOLD: Final = 6
"""Research with at least this confidence skips validation."""
CONFIDENCE_HIGH_THRESHOLD: Final = 8
"""At or above: the answer carries no disclaimer."""
CONFIDENCE_MEDIUM_THRESHOLD: Final = 5
"""At or above (and below HIGH): "couldn't verify all details"; below: "limited information"."""
MAX_RESEARCH_ATTEMPTS: Final = 3
"""Research -> validation rounds before answering with what there is."""
MAX_CLARIFICATION_ATTEMPTS: Final = 2
"""Questions asked back before proceeding with a best guess."""

MESSAGE_THRESHOLD: Final = 10
"""More messages than this are folded into the conversation summary."""
MESSAGES_TO_KEEP: Final = 4
"""Messages kept verbatim after folding."""
SUMMARY_MAX_CHARS: Final = 1500
"""Upper bound of the conversation summary, so long threads stay cheap."""

MAX_QUESTION_CHARS: Final = 4000
"""Longest question ``ask`` accepts."""
MAX_ANSWER_CHARS: Final = 2000
"""Clarification answers are cut to this length."""

CLARITY_TOKEN_BUDGET: Final = 4000
"""Tokens of conversation context the clarity agent sends to the LLM."""
VALIDATOR_TOKEN_BUDGET: Final = 6000
"""Tokens of findings the validator sends to the LLM."""
SYNTHESIS_TOKEN_BUDGET: Final = 8000
"""Tokens of findings the synthesis agent sends to the LLM."""

NODE_TIMEOUT_SECONDS: Final = 120.0
"""No agent step may take longer than this."""
