"""The names that moved from the Q&A app up to the composition root still import from
their old places, each with a DeprecationWarning naming the new import."""

from __future__ import annotations

import importlib

import pytest

import research_fsm.assistant
import research_fsm.qa.runner


@pytest.mark.parametrize(
    ("old", "name", "home", "advice"),
    [
        (
            "research_fsm.qa",
            "ResearchAssistant",
            research_fsm.assistant,
            "from research_fsm import",
        ),
        ("research_fsm.qa", "DEFAULT_KEEP", research_fsm.assistant, "from research_fsm.assistant"),
        ("research_fsm.qa", "default_store", research_fsm.assistant, "from research_fsm.assistant"),
        (
            "research_fsm.qa.assistant",
            "ResearchAssistant",
            research_fsm.assistant,
            "from research_fsm.assistant",
        ),
        (
            "research_fsm.qa.assistant",
            "default_home",
            research_fsm.assistant,
            "from research_fsm.assistant",
        ),
        ("research_fsm.qa.assistant", "Reply", research_fsm.qa.runner, "from research_fsm.qa"),
        ("research_fsm.qa.assistant", "Token", research_fsm.qa.runner, "from research_fsm.qa"),
    ],
)
def test_a_moved_name_is_the_new_one_with_a_warning(
    old: str, name: str, home: object, advice: str
) -> None:
    """``old.name`` is the very object at its new home, and warns with the new import."""
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=f"{old}.{name} moved: {advice}") as caught:
        value = getattr(module, name)
    assert value is getattr(home, name)
    assert [__file__] == [warning.filename for warning in caught]


def test_a_name_that_never_was_there_is_an_attribute_error() -> None:
    """Any other missing name of the old places raises AttributeError naming module and name."""
    import research_fsm.qa
    import research_fsm.qa.assistant

    for module in (research_fsm.qa, research_fsm.qa.assistant):
        with pytest.raises(
            AttributeError, match=f"module '{module.__name__}' has no attribute 'Nope'"
        ):
            module.Nope  # noqa: B018
