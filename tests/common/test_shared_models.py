"""The models the apps share (``research_fsm.common.models.Source``), the apps' own facts
and sources under their new names, their deprecated old names, and results saved before
the rename loading unchanged.

``saved/`` holds what the code before the rename wrote: a file store with one company
report's thread and one deep-research session's (offline Siemens; a one-page Spring Boot
corpus), the report's ``sources.json`` and ``meta.json`` and the session's
``evidence.json``.
"""

from __future__ import annotations

import json
import re
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import research_fsm.deep
import research_fsm.deep._model
import research_fsm.reports
import research_fsm.reports._model
from research_fsm.common.models import Source
from research_fsm.deep import DeepSource, DeepState, QuotedFact
from research_fsm.reports import ReportFact, ReportSource, ReportState
from research_fsm.stores import JsonFileCheckpointStore

SAVED = Path(__file__).parent / "saved"
REPORT_THREAD = "report-4c6a9123a5"
DEEP_THREAD = "deep-20261208T021739Z-ac9afaf158f8fbfc"


def test_both_apps_sources_are_the_shared_source() -> None:
    """A report's and a session's sources subclass the one shared ``Source``, whose fields
    (title, retrieval time) each has, and neither app defines a ``Source`` of its own."""
    assert issubclass(ReportSource, Source) and issubclass(DeepSource, Source)
    shared = set(Source.model_fields)
    assert {"title", "retrieved_at"} == shared
    assert shared <= set(ReportSource.model_fields) and shared <= set(DeepSource.model_fields)
    for module in (research_fsm.reports, research_fsm.deep):
        assert "Source" not in module.__all__ and "Fact" not in module.__all__


def test_the_two_facts_have_distinct_names() -> None:
    """A report's fact (a labelled value) and a session's fact (a quote) are two models
    with two names, each exported by its app."""
    assert set(ReportFact.model_fields).isdisjoint(QuotedFact.model_fields)
    assert {"key", "value", "urls"} <= set(ReportFact.model_fields)
    assert {"kind", "statement", "quote"} <= set(QuotedFact.model_fields)
    assert "ReportFact" in research_fsm.reports.__all__
    assert {"QuotedFact", "DeepSource"} <= set(research_fsm.deep.__all__)


@pytest.mark.parametrize(
    ("module", "old", "new"),
    [
        (research_fsm.reports, "Source", ReportSource),
        (research_fsm.reports, "Fact", ReportFact),
        (research_fsm.reports._model, "Source", ReportSource),
        (research_fsm.reports._model, "Fact", ReportFact),
        (research_fsm.deep._model, "Source", DeepSource),
        (research_fsm.deep._model, "Fact", QuotedFact),
    ],
)
def test_old_names_still_import_with_a_deprecation_warning(
    module: Any, old: str, new: type[BaseModel]
) -> None:
    """``research_fsm.reports.Source`` (and the other old names) give the renamed model,
    warning at the caller's line with the name to use instead."""
    with pytest.warns(
        DeprecationWarning, match=rf"{module.__name__}\.{old} is deprecated: use "
    ) as got:
        value = getattr(module, old)
    assert value is new
    assert [__file__] == [w.filename for w in got]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(f"from {module.__name__} import {old}", {})  # an import statement's line: <string>
    deprecated = [w.filename for w in caught if w.category is DeprecationWarning]
    assert deprecated and {"<string>"} == set(deprecated)  # a package's may warn twice


def test_unknown_names_still_raise_attribute_error() -> None:
    """A name an app never had is an ``AttributeError`` naming it, not a warning."""
    with pytest.raises(
        AttributeError, match=re.escape("'research_fsm.reports' has no attribute 'Facts'")
    ):
        _ = research_fsm.reports.Facts
    with pytest.raises(
        AttributeError, match=re.escape("'research_fsm.deep' has no attribute 'Source'")
    ):
        _ = research_fsm.deep.Source  # type: ignore[attr-defined]  # never public there


async def _latest_state(store_dir: Path, thread_id: str) -> dict[str, Any]:
    store = JsonFileCheckpointStore(store_dir)
    checkpoint = await store.load_latest(thread_id)
    assert checkpoint is not None, f"thread {thread_id} not found in {store_dir}"
    state = checkpoint.state
    assert isinstance(state, dict)
    return state


async def test_a_report_thread_saved_before_the_rename_loads(tmp_path: Path) -> None:
    """The company report's saved state validates as ``ReportState`` with ``ReportSource``
    and ``ReportFact`` in it and writes back exactly the JSON it was read from."""
    shutil.copytree(SAVED / "store", tmp_path / "store")
    saved = await _latest_state(tmp_path / "store", REPORT_THREAD)
    state = ReportState.model_validate(saved)
    assert state.financial is not None and state.company == "Siemens"
    assert all(type(source) is ReportSource for source in state.sources) and state.sources
    assert all(type(fact) is ReportFact for fact in state.financial.facts)
    assert "net_margin" in {fact.key for fact in state.financial.facts}
    assert saved == state.model_dump(mode="json")


async def test_a_deep_research_thread_saved_before_the_rename_loads(tmp_path: Path) -> None:
    """The deep-research session's saved state validates as ``DeepState`` with
    ``DeepSource`` and ``QuotedFact`` in it and writes back exactly the JSON it was read
    from."""
    shutil.copytree(SAVED / "store", tmp_path / "store")
    saved = await _latest_state(tmp_path / "store", DEEP_THREAD)
    state = DeepState.model_validate(saved)
    assert [("S1", "web")] == [(s.id, s.kind) for s in state.sources]
    assert all(type(source) is DeepSource for source in state.sources)
    facts = [fact for analysis in state.analyses for fact in analysis.facts]
    assert facts and all(type(fact) is QuotedFact for fact in facts)
    assert saved == state.model_dump(mode="json")


def test_saved_report_and_session_files_read_as_the_new_models() -> None:
    """A saved report's ``sources.json`` entries and ``meta.json`` facts, and a session's
    ``evidence.json`` facts, read as the renamed models under the same keys."""
    sources = json.loads((SAVED / "report" / "sources.json").read_text(encoding="utf-8"))
    for entry in sources:
        fields = {key: value for key, value in entry.items() if key != "id"}
        assert fields == ReportSource.model_validate(fields).model_dump()
    facts = json.loads((SAVED / "report" / "meta.json").read_text(encoding="utf-8"))["facts"]
    assert facts == [ReportFact.model_validate(fact).model_dump() for fact in facts]
    evidence = json.loads((SAVED / "session" / "evidence.json").read_text(encoding="utf-8"))
    quoted = [fact for analysis in evidence for fact in analysis["facts"]]
    assert quoted and quoted == [QuotedFact.model_validate(f).model_dump() for f in quoted]
