"""``python -m benchmarks.answers --quick`` (the answer evaluation's CI form) runs end to
end from the installed packages' READMEs and holds its goals other than time (timing
goals are judged on full runs, not in CI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_quick_answer_evaluation(tmp_path: Path) -> None:
    """Six questions (direct, spread, unanswerable): answers found and cited verbatim,
    the unanswerable ones refused, every session grounded."""
    out = tmp_path / "answers.json"
    env = {
        **os.environ,
        "RESEARCH_FSM_HOME": str(tmp_path / "home"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    for key in ("ANTHROPIC_API_KEY", "TAVILY_API_KEY", "RESEARCH_DOCS", "LOG_LEVEL"):
        env.pop(key, None)
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.answers", "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
    )
    assert 0 == result.returncode, result.stderr[-2000:]
    payload = json.loads(out.read_text(encoding="utf-8"))
    figures = payload["figures"]["all"]
    assert 6 == figures["questions"]
    assert 1.0 == figures["quotes_verbatim"]
    assert 0 == figures["grounding_problems"]
    assert 1.0 == figures["unanswerable_refused"]
    if not payload["stale_facts"]:  # another version of a package may word it otherwise
        assert 0.0 == figures["answerable_refused"]
        assert figures["facts_found"] >= 0.8
        assert 1.0 == figures["citation_precision"]


def test_a_folder_given_with_docs_is_the_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--docs DIR`` scores a question file written for that folder (HTML pages here);
    a folder that is not there is named in a usage error."""
    from benchmarks.answers.__main__ import main

    folder = tmp_path / "errors"
    folder.mkdir()
    page = (
        "<html><head><title>E0133 - Error codes index</title></head><body><main>\n"
        '<h1 id="error-code-E0133">Error code E0133</h1>\n'
        "<p>Unsafe code was used outside of an unsafe block.</p>\n"
        "<p>Wrapping the call in an unsafe block makes it compile.</p>\n"
        "</main></body></html>\n"
    )
    (folder / "E0133.html").write_text(page, encoding="utf-8")
    fact = {
        "any": ["Unsafe code was used outside of an unsafe block."],
        "file": "E0133.html",
        "line": 3,
    }
    questions = {
        "questions": [
            {
                "id": "x1",
                "split": "x",
                "kind": "direct",
                "question": "What does E0133 mean?",
                "facts": [fact],
            },
            {
                "id": "x2",
                "split": "x",
                "kind": "unanswerable",
                "question": "What is E0999?",
                "facts": [],
            },
        ]
    }
    file = tmp_path / "questions.json"
    file.write_text(json.dumps(questions), encoding="utf-8")
    out = tmp_path / "answers.json"
    monkeypatch.setenv("RESEARCH_FSM_HOME", str(tmp_path / "home"))
    assert 0 == main(["--questions", str(file), "--docs", str(folder), "--out", str(out)])
    payload = json.loads(out.read_text(encoding="utf-8"))
    expected = {"facts_found": 1.0, "citation_precision": 1.0, "unanswerable_refused": 1.0}
    assert expected == {k: payload["figures"]["all"][k] for k in expected}
    assert ({"folder": str(folder.resolve())}, []) == (payload["corpus"], payload["stale_facts"])
    with pytest.raises(SystemExit):
        main(["--questions", str(file), "--docs", str(tmp_path / "nowhere")])


def test_calibration_says_whether_the_cutoff_meets_both_error_kinds() -> None:
    """The refusal cut-off meets both kinds when every unanswerable question's best passage
    is under it and no more than 5% of the answerable ones' are; one unanswerable question
    above it, or too many answerable ones under it, and it does not."""
    from benchmarks.answers.__main__ import calibration

    def results(unanswerable: list[float], answerable: list[float]) -> list[dict[str, object]]:
        return [{"kind": "unanswerable", "best_passage": s} for s in unanswerable] + [
            {"kind": "direct", "best_passage": s} for s in answerable
        ]

    good = calibration(results([0.5, 0.62], [0.9] * 20))
    assert good["both_met"] and 0.62 == good["unanswerable_best_max"]
    assert not calibration(results([0.5, 0.75], [0.9] * 20))["both_met"]
    assert not calibration(results([0.5], [0.3, 0.4] + [0.9] * 18))["both_met"]
    assert calibration(results([0.5], [0.3] + [0.9] * 19))["both_met"]
