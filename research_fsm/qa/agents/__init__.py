"""The agents of the research assistant, one module each (described in ``..agent_table``)."""

from ._clarity import ClarityAgent, ClarityVerdict
from ._error_recovery import ErrorRecoveryAgent
from ._intents import coverage_score
from ._interrupt import InterruptAgent
from ._research import ResearchAgent
from ._synthesis import SynthesisAgent
from ._validator import ValidationVerdict, ValidatorAgent

__all__ = [
    "ClarityAgent",
    "ClarityVerdict",
    "ErrorRecoveryAgent",
    "InterruptAgent",
    "ResearchAgent",
    "SynthesisAgent",
    "ValidationVerdict",
    "ValidatorAgent",
    "coverage_score",
]
