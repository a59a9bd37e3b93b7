"""Fixtures for deep research, and the grounding check run after every test here.

After each test of this folder, every session under the test's home that has a
``report.md`` is checked with ``research_fsm.deep.grounding_problems``: every ``[S#]``
resolves to a retrieved source, no URL or file that was not retrieved appears, every
piece of evidence occurs verbatim in its source, the Verification counts match
``verification.json``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from research_fsm import ResearchAssistant
from research_fsm.deep import Found, StaticSearch, grounding_problems
from research_fsm.engine import MemoryCheckpointStore

SPRING = Found(
    kind="web",
    title="Spring Boot 3.0 Migration Guide",
    locator="https://github.com/spring-projects/spring-boot/wiki/Spring-Boot-3.0-Migration-Guide",
    text=(
        "Spring Boot 3.0 requires Java 17 as a minimum version. If you are currently using "
        "Java 8 or Java 11, you need to upgrade your JDK before you can develop Spring Boot 3.0 "
        "applications.\n\nBefore you start the migration, upgrade to the latest 2.7.x version "
        "of Spring Boot.\n\nSpring Boot 3.0 has upgraded to Jakarta EE 10 APIs. The javax "
        "packages are no longer supported; replace javax imports with jakarta imports.\n"
    ),
    score=0.95,
)
PREPARING = Found(
    kind="web",
    title="Preparing for Spring Boot 3.0",
    locator="https://spring.io/blog/2022/05/24/preparing-for-spring-boot-3-0",
    text=(
        "Upgrade to Spring Boot 2.7 first and fix the deprecation warnings. Spring Boot 3 "
        "migration also requires Spring Framework 6. Configuration properties that were "
        "renamed are reported by the spring-boot-properties-migrator module during migration."
    ),
    score=0.9,
)
BAELDUNG = Found(
    kind="web",
    title="Migrate to Spring Boot 3",
    locator="https://www.baeldung.com/spring-boot-3-migration",
    text=(
        "To migrate an application to Spring Boot 3, first update the Java version to 17. "
        "WebSecurityConfigurerAdapter was removed in Spring Boot 3 migration, so security "
        "configuration must change. Hibernate 6 is the default JPA provider after the Spring "
        "Boot 3 migration."
    ),
    score=0.8,
)
PASTA = Found(
    kind="web",
    title="Cooking pasta",
    locator="https://example.com/pasta",
    text="Boil water and add salt. Pasta cooks in ten minutes.",
)
CORPUS = [SPRING, PREPARING, BAELDUNG, PASTA]
TOPIC = "Spring Boot 2 to 3 migration"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``RESEARCH_FSM_HOME`` in the test's temporary folder; no keys, no docs."""
    monkeypatch.setenv("RESEARCH_FSM_HOME", str(tmp_path / "home"))
    for name in ("TAVILY_API_KEY", "ANTHROPIC_API_KEY", "RESEARCH_DOCS", "RESEARCH_FSM_STORE"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


@pytest.fixture
def web() -> StaticSearch:
    """A small web-like corpus about the Spring Boot 3 migration (and one about pasta)."""
    return StaticSearch(CORPUS, mode="web")


@pytest.fixture
def assistant(home: Path, web: StaticSearch) -> ResearchAssistant:
    """An offline assistant whose web search is ``web``."""
    return ResearchAssistant(store=MemoryCheckpointStore(), web_search=web)


@pytest.fixture(autouse=True)
def _grounded(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[None]:
    yield
    for report in sorted(tmp_path.rglob("sessions/*/report.md")):
        assert [] == grounding_problems(report.parent), f"not grounded: {report.parent}"
