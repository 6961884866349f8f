"""One error format for every sub-command (``holysheep <command>: error: ...``, exit 2 before any request for a
bad value) and errors in the CLI's words: a library message advising a Python option names the flag."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from holysheep._engine import quota_check as _quota_check
from holysheep.cli import main
from holysheep.cli._words import PYTHON_ONLY_ADVICE, cli_words
from holysheep.testing import FakeServer

from .conftest import ERROR_LINE

PYTHON_KWARG = re.compile(r"\b\w+=(?:True|False)\b|(?<![\w.-])(?!request_id=)[a-z]+_[a-z_]*=")  # `x=True`, `api_key=`


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer() as srv:
        yield srv


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run the CLI in-process. Every stderr of this module's scenarios is checked here (each test on its own,
    whatever worker runs it): one error format, and no Python advice (``name=True``, ``python_name=``)."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert ERROR_LINE.match(err) or "warning" in err or err == "" or err.startswith("1/1 done"), err
    assert not PYTHON_KWARG.search(err), err
    return code, out, err


# One bad value per sub-command; {in} / {out} are a JSONL input and an output path.
BAD_VALUES = [
    ("chat", ["chat", "hi", "--max-tokens", "-3"], "--max-tokens"),
    ("chat", ["chat", "hi", "--temperature", "9"], "--temperature"),
    ("chat", ["chat", "hi", "--timeout", "0"], "--timeout"),
    ("models", ["models", "--base-url", "ftp://x"], "--base-url"),
    ("quota", ["quota", "--base-url", "ftp://x"], "--base-url"),
    ("batch", ["batch", "{in}", "-o", "{out}", "--max-tokens", "-3"], "--max-tokens"),
    ("batch", ["batch", "{in}", "-o", "{out}", "--rpm", "-5"], "--rpm"),
    ("batch", ["batch", "{in}", "-o", "{out}", "--price", "bad"], "--price"),
    ("batch", ["batch", "{in}"], "-o/--output"),
    ("batch", ["batch", "{in}", "-o", "{out}", "--outage-failure-ratio", "2"], "--outage-failure-ratio: must be <= 1"),
    ("bench", ["bench", "-n", "0"], "--requests"),
    ("bench", ["bench", "--max-tokens", "-3"], "--max-tokens"),
    ("gpus", ["gpus", "--sort", "x"], "--sort"),
    ("plan", ["plan", "70b", "--max-gpus", "0"], "--max-gpus"),
    ("plan", ["plan", "70b", "--budget-per-hour", "-1"], "--budget-per-hour"),
    ("mock-server", ["mock-server", "--port", "99999"], "--port"),
    ("mock-server", ["mock-server", "--latency-ms", "-5"], "--latency-ms"),
    ("cache", ["cache", "stats", "{out}"], "no cache file"),
    *((command, [*argv, "--base-url", "http://example.test/v1"], "pass --allow-insecure-http if")  # a key over http
      for command, argv in (("chat", ["chat", "hi"]), ("models", ["models"]), ("quota", ["quota"]),
                            ("batch", ["batch", "{in}", "-o", "{out}"]), ("bench", ["bench"]))),
]


@pytest.mark.parametrize(("command", "argv", "named"), BAD_VALUES, ids=[" ".join(a) for _, a, _ in BAD_VALUES])
def test_a_bad_value_is_one_error_line_exit_2_and_no_request(
        command: str, argv: list[str], named: str, server: FakeServer, jsonl: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    argv = [a.replace("{in}", str(jsonl)).replace("{out}", str(tmp_path / "out.jsonl")) for a in argv]
    before = len(server.requests)
    connection = ["--api-key", server.api_key, *([] if "--base-url" in argv else ["--base-url", server.url])]
    code, _, err = _run([*argv, *connection], capsys)
    assert code == 2, err
    assert len(server.requests) == before  # refused before any request
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"holysheep {command}: error: "), err
    assert named in lines[0]
    assert not (tmp_path / "out.jsonl").exists()


def test_an_error_before_the_command_is_known_has_the_bare_prefix(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["no-such-command"], capsys)
    assert code == 2 and err.startswith("holysheep: error: argument COMMAND: invalid choice: 'no-such-command'")


# Every library message that advises a Python option, as the CLI prints it.
LIBRARY_ADVICE = [
    ("rerun_changed=True (--rerun-changed) needs resume=True (--resume): it sends again",
     "--rerun-changed needs --resume: it sends again"),
    ("output file o already has results: pass resume=True (--resume) to continue it, or overwrite=True "
     "(--overwrite) to start again.", "output file o already has results: pass --resume to continue it, or "
     "--overwrite to start again."),
    ("pass --rerun-changed (rerun_changed=True) with --resume; or use a new output file, or overwrite=True "
     "(--overwrite) to start again", "pass --rerun-changed with --resume; or use a new output file, or --overwrite "
     "to start again"),
    ("Resume it with --output-format holysheep (output_format='holysheep'), or write",
     "Resume it with --output-format holysheep, or write"),
    ("no price (pass prices= / --price)", "no price (pass --price)"),
    ("needs one: pass prices= (--price MODEL=IN,OUT)", "needs one: pass --price MODEL=IN,OUT"),
    ("no price for model 'm', and max_cost_usd needs one: pass prices={'m': (input_per_m, output_per_m)} (USD per "
     "million tokens) or --price m=IN,OUT. Not sent.", "no price for model 'm', and --max-cost needs one: pass "
     "--price m=IN,OUT. Not sent."),
    ("pass prices={'m': (input_per_m, output_per_m)} (USD per million tokens), or --price m=IN,OUT on the command "
     "line.", "pass --price m=IN,OUT on the command line."),
    ("x (require_quota=True: nothing was sent; drop it to run without a quota check.)",
     "x (--require-quota: nothing was sent; drop it to run without a quota check.)"),
    ("The quota check failed (boom); require_quota=True: nothing was sent. Try again, or drop require_quota.",
     "The quota check failed (boom); --require-quota: nothing was sent. Try again, or drop --require-quota."),
    ("quota check skipped. Pass check_quota=False to skip the quota check.",
     "quota check skipped. Pass --no-quota-check to skip the quota check."),
    ("max_cost_usd=$0.5000 reached: $0.4000 spent", "--max-cost $0.5000 reached: $0.4000 spent"),
    # not options: request fields, JSON paths and words stay as they are
    ("prompt chars/4 + max_tokens; custom_id a; messages[0].max_tokens=3 (type=invalid_request_error)",
     "prompt chars/4 + max_tokens; custom_id a; messages[0].max_tokens=3 (type=invalid_request_error)"),
]


@pytest.mark.parametrize(("library", "cli"), LIBRARY_ADVICE)
def test_library_advice_is_rendered_as_the_flag(library: str, cli: str) -> None:
    assert cli_words(library) == cli


# Connection advice (the client's options), as every networked command prints it.
CONNECTION_ADVICE = [
    ("Refusing to send the API key over plain http:// to 'h', where anyone on the path can read it. Use https://, "
     "or pass allow_insecure_http=True if this network is trusted.", "Refusing to send the API key over plain "
     "http:// to 'h', where anyone on the path can read it. Use https://, or pass --allow-insecure-http if this "
     "network is trusted."),
    ("No API key: pass api_key='hs_...' to the client or set the HOLYSHEEP_API_KEY environment variable.",
     "No API key: pass --api-key hs_... or set the HOLYSHEEP_API_KEY environment variable."),
    ("The key in api_key ends with a newline (as a key read with open(path).read() does): strip it, e.g. "
     "api_key=key.strip(). The SDK does not strip it for you. Nothing was sent.", "The key in --api-key ends with a "
     "newline (as a key read with open(path).read() does): strip it. The SDK does not strip it for you. Nothing "
     "was sent."),
    ("Copy the key from your HolySheep dashboard into api_key=... or the HOLYSHEEP_API_KEY environment variable (a "
     "self-hosted base_url accepts any key).", "Copy the key from your HolySheep dashboard into --api-key ... or the "
     "HOLYSHEEP_API_KEY environment variable (a self-hosted --base-url accepts any key)."),
    ("SSL_CERT_FILE='/x': no such file. The environment variable SSL_CERT_FILE names the CA bundle to trust; fix or "
     "unset it, or pass verify=... (trust_env=False ignores it).", "SSL_CERT_FILE='/x': no such file. The "
     "environment variable SSL_CERT_FILE names the CA bundle to trust; fix or unset it."),
    ("The proxy in the environment (HTTP_PROXY / HTTPS_PROXY / ALL_PROXY) is unusable: x. Fix it, or pass "
     "trust_env=False.", "The proxy in the environment (HTTP_PROXY / HTTPS_PROXY / ALL_PROXY) is unusable: x. Fix "
     "or unset it, or pass --proxy URL."),
    ("max_cost_usd: item 3 sets no max_tokens: reserving 4096 output tokens for each such item, an assumption "
     "(set max_tokens= to make the cap a hard bound)", "--max-cost: item 3 sets no max_tokens: reserving 4096 "
     "output tokens for each such item, an assumption (set --max-tokens, or max_tokens in each line, to make the "
     "cap a hard bound)"),
    ("The API key (hs_…rong) was rejected: check that HOLYSHEEP_API_KEY (or api_key=) holds a current key.",
     "The API key (hs_…rong) was rejected: check that HOLYSHEEP_API_KEY (or --api-key) holds a current key."),
    ("This server has no quota endpoint (GET /quota answered 404). Skip the quota check (batch(check_quota=False)).",
     "This server has no quota endpoint (GET /quota answered 404). Skip the quota check (holysheep batch "
     "--no-quota-check)."),
]


@pytest.mark.parametrize("command", ["chat", "models", "quota", "batch", "bench"])
@pytest.mark.parametrize(("library", "cli"), CONNECTION_ADVICE, ids=[c[:24] for c, _ in CONNECTION_ADVICE])
def test_connection_advice_is_rendered_as_the_flag(command: str, library: str, cli: str) -> None:
    """With the running command's own flags (`use_flags_of`), as the CLI translates its errors."""
    from holysheep.cli._app import build_parser
    from holysheep.cli._words import use_flags_of

    parser = build_parser()
    use_flags_of(next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command])
    try:
        assert cli_words(library) == cli
    finally:
        use_flags_of(None)


def test_the_advice_in_the_library_sources_is_all_in_the_table() -> None:
    """Each message above is the library's own text: a reworded one fails here, not silently in the CLI."""
    src = Path(__file__).parents[2] / "src" / "holysheep"
    text = "".join(p.read_text() for p in (src / "batch").glob("*.py")) + "".join(
        (src / "_engine" / f).read_text() for f in ("quota_check.py", "spend.py", "attempts.py"))
    text = re.sub(r"\"\s*\n\s*f?\"", "", text)  # join implicitly concatenated string literals
    for piece in ("(--rerun-changed) needs resume=True (--resume)", "pass resume=True (--resume) to continue",
                  "--rerun-changed (rerun_changed=True) with --resume", "(output_format={held!r})",
                  "pass prices= / --price", "pass prices= (--price MODEL=IN,OUT)", "require_quota=True: nothing",
                  "drop require_quota.", "Pass %s to skip the quota check", 'SKIP_OPTION = "check_quota=False"',
                  "max_cost_usd=${self.limit_usd"):
        assert piece in text, piece


def test_advice_without_a_flag_of_its_own_is_the_librarys_text() -> None:
    """`PYTHON_ONLY_ADVICE` (library wording -> CLI wording) quotes the library: a reworded message fails here."""
    src = Path(__file__).parents[2] / "src" / "holysheep"
    text = "".join(p.read_text() for p in src.rglob("*.py") if "cli" not in p.parts)
    text = re.sub(r"\"\s*\n\s*f?\"", "", text)  # join implicitly concatenated string literals
    for python, _ in PYTHON_ONLY_ADVICE:
        assert python in text, python
    assert "or pass allow_insecure_http=True if this network is trusted." in text


def _batch(server: FakeServer, jsonl: Path, out: Path, *flags: str) -> list[str]:
    return ["batch", str(jsonl), "-o", str(out), "--base-url", server.url, "--api-key", server.api_key,
            "--no-progress", *flags]


def test_a_missing_quota_endpoint_warns_naming_no_quota_check(jsonl: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    _quota_check._warned_no_quota.clear()
    with FakeServer(quota_limit=None) as no_quota:
        code, _, err = _run(_batch(no_quota, jsonl, tmp_path / "out.jsonl"), capsys)
    assert code == 0, err
    (line,) = [ln for ln in err.splitlines() if "quota check" in ln]
    assert line.startswith("holysheep batch: warning: Batch quota check skipped: this server has no quota endpoint")
    assert line.endswith("Pass --no-quota-check to skip the quota check.") and "check_quota" not in err


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_require_quota_without_quota_names_the_flag(json_flag: list[str], jsonl: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    with FakeServer(quota_limit=None) as no_quota:
        code, out, err = _run(_batch(no_quota, jsonl, tmp_path / "out.jsonl", "--require-quota", *json_flag), capsys)
        assert [r.path for r in no_quota.requests] == ["/v1/quota"]
    assert code == 2 and out == ""  # --json too: the error is the same one line on stderr, stdout stays empty
    assert err.startswith("holysheep batch: error: ") and len(err.splitlines()) == 1, err
    assert "(--require-quota: nothing was sent; drop it to run without a quota check.)" in err
    assert "require_quota" not in err


def test_a_failing_quota_check_with_require_quota_names_the_flag(jsonl: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    with FakeServer(quota_limit=1) as tiny:  # 1 token left: the batch cannot be shown to fit
        code, _, err = _run(_batch(tiny, jsonl, tmp_path / "out.jsonl", "--require-quota"), capsys)
        assert [r.path for r in tiny.requests] == ["/v1/quota"]
    assert code == 2 and err.startswith("holysheep batch: error: The batch needs about "), err
    assert err.endswith("(--require-quota: nothing was sent.)\n") and "=True" not in err


def test_resume_advice_names_flags(server: FakeServer, jsonl: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.jsonl"
    assert _run(_batch(server, jsonl, out), capsys)[0] == 0
    before = len(server.requests)
    code, _, err = _run(_batch(server, jsonl, out), capsys)
    assert code == 2 and len(server.requests) == before
    assert err == (f"holysheep batch: error: output file {out} already has results: pass --resume to continue it, "
                   "or --overwrite to start again.\n")
    code, _, err = _run(_batch(server, jsonl, out, "--rerun-changed"), capsys)
    assert code == 2 and err.startswith("holysheep batch: error: --rerun-changed needs --resume: ")


def test_json_mode_errors_are_the_same_line(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    plain = _run(["chat", "hi", "--max-tokens", "-3", "--base-url", server.url, "--api-key", server.api_key], capsys)
    as_json = _run(["--json", "chat", "hi", "--max-tokens", "-3", "--base-url", server.url, "--api-key",
                    server.api_key], capsys)
    assert plain == as_json and plain[0] == 2 and plain[1] == ""
    assert plain[2] == ("holysheep chat: error: --max-tokens: must be an integer >= 1, got -3. Pass --max-tokens 1 "
                        "or more.\n")


def test_a_global_api_key_does_not_stay_in_the_callers_environment(
        capsys: pytest.CaptureFixture[str], jsonl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`main([... "--api-key", k, "batch", ...])` called in-process (a notebook, a test) hands the key to the
    batch for that command only: it used to stay in ``os.environ`` and reach every later client."""
    monkeypatch.delenv("HOLYSHEEP_API_KEY", raising=False)
    import os

    code, _out, err = _run(["--api-key", "hs_test_0123456789abcdefABCDEF", "batch", str(tmp_path / "missing.jsonl"),
                            "-o", str(tmp_path / "out")], capsys)
    assert code == 2 and "missing.jsonl" in err and "HOLYSHEEP_API_KEY" not in os.environ


def test_the_dry_run_report_names_flags(jsonl: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The report is stdout, not an error line, and in the CLI's words too."""
    code, out, _ = _run(["batch", str(jsonl), "--dry-run", "--model", "no-such-priced-model"], capsys)
    assert code == 0 and re.search(r"\n  no-such-priced-model: 1 item\(s\), .*, no price \(pass --price\)\n", out), out
    code, out, _ = _run(["batch", str(jsonl), "--dry-run", "--model", "no-such-priced-model", "--max-cost", "1"],
                        capsys)
    assert code == 0 and out.endswith("refused line 1 (a): model 'no-such-priced-model' has no price, and --max-cost "
                                      "needs one: pass --price MODEL=IN,OUT\n"), out
    assert not PYTHON_KWARG.search(out)


def test_a_stop_names_the_flag_that_sets_its_limit(jsonl: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A `Retry-After` longer than --max-pause-s stops the batch (resumable): the warning and the error name the
    flag and its value, as set, not `max_pause_s=`."""
    from holysheep.testing._fault import Fault

    with FakeServer(faults=[Fault.status(429, retry_after=100)]) as server:
        code, _, err = _run([*_batch(server, jsonl, tmp_path / "out.jsonl", "--no-quota-check", "--max-pause-s",
                                     "50")], capsys)
        assert len(server.requests) == 1
    assert code == 1
    assert err.endswith("holysheep batch: error: stopped (the server asked to wait 100 s, longer than --max-pause-s "
                        "50); fix the cause and run again with --resume.\n"), err
    assert "max_pause_s" not in err and not PYTHON_KWARG.search(err)


def test_a_rejected_key_and_an_unknown_model_name_flags(jsonl: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A 401 says what to check once, in flags; a result line's own 404 (``--output-format openai`` prints each)
    is not rewritten, but its advice to the caller is: `holysheep models` and --base-url, not
    `client.models.list()` and the base_url."""
    with FakeServer(strict_models=True) as server:
        code, _, err = _run(["quota", "--base-url", server.url, "--api-key", "hs_wrongwrongwrongwrong"], capsys)
        assert code == 1 and err.endswith("The API key (hs_…rong) was rejected: check that HOLYSHEEP_API_KEY (or "
                                          "--api-key) holds a current key.\n"), err
        code, _, err = _run(_batch(server, jsonl, tmp_path / "out.jsonl", "--output-format", "openai", "--model",
                                   "no-such-model"), capsys)
    assert code == 1
    (line,) = [ln for ln in err.splitlines() if ln.startswith("holysheep batch: error: a failed: HTTP 404")]
    assert line.endswith("Check the model name ('holysheep models' shows what is served) and --base-url."), line
