"""``research-fsm``: ask, answer, chat, graph, history; the parser and ``main``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import re
import secrets
import sys
from typing import TextIO

from .._logging import configure_logging
from ..assistant import ResearchAssistant
from ..common.text import for_terminal
from ..deep import InvalidResearchRequest
from ..engine import EngineError, validate_thread_id
from ..errors import ResearchError
from ..qa import Answer, Progress, Reply, Token
from ..qa.constants import MAX_QUESTION_CHARS
from ..reports import InvalidReportRequest
from ..sources import create_data_source
from ..stores import MissingExtra
from ._deep import add_deep_parsers, run_deep, run_sessions
from ._doctor import add_doctor_parser, run_doctor
from ._inspect import add_inspect_parser, run_inspect
from ._mcp import add_mcp_parser, run_mcp
from ._render import AnswerView, print_markdown
from ._reports import add_parsers, answer_report, run_report, run_reports
from ._serve import add_serve_parser, run_serve

__all__ = ["main"]

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NEEDS_ANSWER = 0, 1, 2, 3
EXIT_ADDRESS, EXIT_INTERRUPTED = 4, 130
EXIT_CODES = """exit status:
  0    answered (also when the reader of the output stops early, as head does)
  1    error (data source, storage, bad conversation)
  2    bad usage (empty or too long question, bad thread id)
  3    the assistant asked back and needs an answer (research-fsm answer --thread ID ...)
  4    serve, inspect: the address cannot be listened on (port in use, or not allowed)
  5    doctor: the LLM answers, but not through tools (structured steps degrade)
  130  interrupted (Ctrl-C)"""


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 1 (or ``code``)."""

    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code


def _parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="research-fsm",
        description="Ask about companies. Works offline; uses Claude and Tavily when keys are set.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    source_help = (
        "data source: mock, directory, tavily or auto (default: $RESEARCH_DATA_SOURCE or auto)"
    )

    ask = sub.add_parser(
        "ask",
        help="ask one question",
        description="Ask one question. When the assistant asks back and there is no "
        "terminal to answer on, the question is printed and the exit status is 3; "
        'continue with: research-fsm answer --thread ID "ANSWER".',
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ask.add_argument("question")
    ask.add_argument("--thread", help="conversation id (default: a new one)")
    ask.add_argument("--source", help=source_help)
    ask.add_argument("--json", action="store_true", help="print the reply as JSON")

    answer = sub.add_parser("answer", help="answer the question a conversation asked back")
    answer.add_argument("text")
    answer.add_argument("--thread", required=True)
    answer.add_argument("--source", help=source_help)
    answer.add_argument("--json", action="store_true", help="print the reply as JSON")

    chat = sub.add_parser("chat", help="a multi-turn conversation")
    chat.add_argument("--thread", help="conversation id (default: a new one)")
    chat.add_argument("--source", help=source_help)

    sub.add_parser("graph", help="print the agents' graph as a Mermaid diagram")

    add_parsers(sub, source_help)
    add_deep_parsers(sub)
    add_serve_parser(sub)
    add_inspect_parser(sub)
    add_doctor_parser(sub, source_help)
    add_mcp_parser(sub)

    history = sub.add_parser("history", help="print a conversation")
    history.add_argument("--thread", required=True)
    history.add_argument("--json", action="store_true")
    return parser


def _question(text: str, what: str = "question") -> str:
    if not text.strip():
        raise CliError(f"the {what} is empty; say what you would like to know", EXIT_USAGE)
    if len(text) > MAX_QUESTION_CHARS:
        raise CliError(
            f"the {what} is {len(text):,} characters long; the limit is {MAX_QUESTION_CHARS:,}",
            EXIT_USAGE,
        )
    if any((ord(ch) < 32 and ch not in "\t\n\r") or ch == "\x7f" for ch in text):
        raise CliError(f"the {what} contains control characters; type plain text", EXIT_USAGE)
    return text


def _thread(thread: str | None) -> str:
    if thread is None:
        return f"q-{secrets.token_hex(4)}"
    try:
        return validate_thread_id(thread)
    except ValueError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


_OPENED: list[ResearchAssistant] = []
"""Assistants made by this command, closed when it ends (their store's connections)."""


def _assistant(source: str | None = None, *, from_env: bool = True) -> ResearchAssistant:
    try:
        if from_env:
            assistant = ResearchAssistant.from_env(source=source)
        else:
            assistant = ResearchAssistant(source=create_data_source(source))
    except (ValueError, MissingExtra) as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    _OPENED.append(assistant)
    return assistant


_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _dumps(value: object) -> str:
    """Indented JSON that keeps non-ASCII text readable but escapes, as ``\\uXXXX``, what
    would drive a terminal: C1 controls, DEL and bidi controls (JSON escapes C0 itself)."""
    text = json.dumps(value, ensure_ascii=False, indent=2)
    return _JSON_UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def _as_json(reply: Reply) -> str:
    return _dumps(
        {
            "status": reply.status,
            "text": reply.text,
            "thread_id": reply.thread_id,
            "token": reply.token,
            "company": reply.company,
            "confidence": reply.confidence,
            "sources": [s.model_dump() for s in reply.sources],
            "path": reply.path,
            "compared": reply.compared,
            "usage": {k: v.model_dump() for k, v in reply.usage.items()},
            "notes": reply.notes,
        }
    )


async def _converse(
    assistant: ResearchAssistant, text: str, thread: str, out: TextIO, err: TextIO
) -> Reply:
    """Stream one turn: progress on ``err``, the answer on ``out`` (drawn as Markdown on
    a terminal, plain text otherwise), then how confident it is."""
    reply: Reply | None = None
    view = AnswerView(out)
    async for event in assistant.stream(text, thread_id=thread):
        if isinstance(event, Progress):
            print(f"  [{event.agent}] {for_terminal(event.message)}", file=err, flush=True)
        elif isinstance(event, Token):
            view.token(event.text)
        elif isinstance(event, Answer):
            reply = event.reply
    assert reply is not None
    view.finish(reply.text)
    label = reply.confidence_label()
    if label:
        print(f"\n{label}", file=out, flush=True)
    if reply.usage_line():
        print(f"\n({reply.usage_line()})", file=out, flush=True)
    for note in reply.notes:
        print(f"  note: {for_terminal(note)}", file=err, flush=True)
    return reply


async def _ask(args: argparse.Namespace, question: str, resume: bool) -> int:
    assistant = _assistant(args.source)
    thread = _thread(args.thread)
    if resume and thread.startswith("report-"):
        return await answer_report(thread, question, assistant)
    if resume and await assistant.pending_question(thread) is None:
        known = await assistant.history(thread)
        raise CliError(
            f"conversation `{thread}` is not waiting for an answer"
            if known
            else f"there is no conversation `{thread}`"
        )
    if args.json:
        reply = await assistant.ask(question, thread_id=thread)
        print(_as_json(reply))
        return EXIT_NEEDS_ANSWER if reply.status == "needs_clarification" else EXIT_OK
    if args.thread is None:
        print(f"  (conversation: {thread})", file=sys.stderr)
    reply = await _converse(assistant, question, thread, sys.stdout, sys.stderr)
    while reply.status == "needs_clarification":
        if not sys.stdin.isatty():
            print(
                f'  (answer with: research-fsm answer --thread {thread} "YOUR ANSWER")',
                file=sys.stderr,
            )
            return EXIT_NEEDS_ANSWER
        answer = await asyncio.to_thread(input, "> ")
        reply = await _converse(
            assistant, _question(answer, "answer"), thread, sys.stdout, sys.stderr
        )
    return EXIT_OK


CHAT_HELP = """Ask about a company, e.g. "Tell me about Apple"; follow-ups keep the company.
  /new    start a new conversation
  /quit   leave (also /exit or Ctrl-D)
  /help   this list"""
_COMMAND = re.compile(r"^/[A-Za-z]+$")


async def _chat(args: argparse.Namespace) -> int:
    assistant = _assistant(args.source)
    thread = _thread(args.thread)
    print(f"Conversation {thread}. Ask about a company; /help for commands.", file=sys.stderr)
    while True:
        try:
            line = await asyncio.to_thread(input, "you> ")
        except EOFError:
            return EXIT_OK
        command = line.strip().lower()
        if not command:
            continue
        if _COMMAND.match(command):  # never sent as a question
            if command in ("/quit", "/exit"):
                return EXIT_OK
            if command == "/new":
                thread = _thread(None)
                print(f"New conversation {thread}.", file=sys.stderr)
            elif command == "/help":
                print(CHAT_HELP, file=sys.stderr)
            else:
                print(f"unknown command {command}; /help lists them", file=sys.stderr)
            continue
        try:
            await _converse(assistant, _question(line), thread, sys.stdout, sys.stderr)
        except CliError as exc:
            print(f"research-fsm: {exc}", file=sys.stderr)


async def _history(args: argparse.Namespace) -> int:
    assistant = _assistant("directory", from_env=False)
    thread = _thread(args.thread)
    messages = await assistant.history(thread)
    if not messages:
        raise CliError(f"there is no conversation `{thread}`")
    if args.json:
        print(_dumps([m.model_dump() for m in messages]))
    else:
        for message in messages:
            head = f"[{message.timestamp}] {message.role}: "
            if message.role == "assistant":
                print_markdown(message.content, sys.stdout, head)
            else:
                print(head + for_terminal(message.content))
            print()
    return EXIT_OK


async def _graph() -> int:
    print((await ResearchAssistant(source=create_data_source("mock")).graph()).to_mermaid(), end="")
    return EXIT_OK


async def _main(args: argparse.Namespace) -> int:
    try:
        return await _command(args)
    finally:
        while _OPENED:
            await _OPENED.pop().aclose()


async def _command(args: argparse.Namespace) -> int:
    if args.command == "ask":
        return await _ask(args, _question(args.question), resume=False)
    if args.command == "answer":
        return await _ask(args, _question(args.text, "answer"), resume=True)
    if args.command == "chat":
        return await _chat(args)
    if args.command == "history":
        return await _history(args)
    if args.command == "report":
        if args.resume is None and args.company is None:
            raise CliError("name a company, e.g. research-fsm report Siemens", EXIT_USAGE)
        if args.company is not None:
            _question(args.company, "company name")
        return await run_report(args, _assistant(args.source))
    if args.command == "reports":
        return await run_reports()
    if args.command == "deep":
        if args.resume is None and args.topic is None:
            raise CliError(
                'say what to research, e.g. research-fsm deep "Spring Boot 2 to 3 '
                'migration" --docs ./notes',
                EXIT_USAGE,
            )
        return await run_deep(args, _assistant())
    if args.command == "sessions":
        return await run_sessions()
    if args.command == "doctor":
        return await run_doctor(args)
    return await _graph()


def _tolerant_stdio() -> None:
    """Bytes the terminal's encoding cannot decode become lone surrogates (the assistant
    strips them) and characters it cannot show are replaced, instead of ending a chat
    or losing an answer with a codec error."""
    for stream, errors in ((sys.stdin, "surrogateescape"), (sys.stdout, "replace")):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors=errors)


def _output_closed() -> int:
    """The reader of stdout went away (``| head``): no message, exit status 0, and
    nothing more is written (stdout goes to /dev/null so the exit's flush is quiet)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout without a file descriptor (a test's buffer)
        pass
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``research-fsm`` and ``python -m research_fsm``."""
    try:
        _tolerant_stdio()
        args = _parser().parse_args(argv)
        configure_logging()
        if args.command == "serve":
            return run_serve(args)
        if args.command == "inspect":
            return run_inspect(args)
        if args.command == "mcp":
            return run_mcp(args)
        return asyncio.run(_main(args))
    except BrokenPipeError:
        return _output_closed()
    except CliError as exc:
        return _fail(str(exc), exc.code)
    except ResearchError as exc:
        usage = isinstance(exc, (InvalidReportRequest, InvalidResearchRequest))
        return _fail(str(exc), EXIT_USAGE if usage else EXIT_ERROR)
    except (EngineError, ValueError, OSError) as exc:  # ValueError: e.g. a bad LOG_LEVEL
        return _fail(str(exc), EXIT_ERROR)
    except KeyboardInterrupt:
        return _fail("interrupted", EXIT_INTERRUPTED)
    except Exception as exc:  # a bug: still one line, never a traceback
        return _fail(f"unexpected error: {type(exc).__name__}: {exc}", EXIT_ERROR)


def _fail(message: str, code: int) -> int:
    """One line on stderr; the exit status ``code`` (a closed stderr is no further error)."""
    with contextlib.suppress(BrokenPipeError, ValueError):
        print(f"research-fsm: {message}", file=sys.stderr, flush=True)
    return code
