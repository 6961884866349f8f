"""The one translation from the library's Python wording to the CLI's: a message that advises a Python option
(``resume=True``, ``check_quota=False``, ``prices=``, ``allow_insecure_http=True``) names the command-line flag
instead (``--resume``, ``--no-quota-check``, ``--price``, ``--allow-insecure-http``). The flags are read from
the batch command's flag table (`holysheep.cli._batch_flags`), the connection flags
(`holysheep.cli._connection_flags`) and the running command's own parser, so a new flag is translated without
a second list; advice with no one-to-one flag is `PYTHON_ONLY_ADVICE`."""

from __future__ import annotations

import argparse
import functools
import re

from holysheep._core.batch_params import BATCH_OPTION_NAMES
from holysheep._core.request import CHAT_PARAM_NAMES

__all__ = ["PYTHON_ONLY_ADVICE", "cli_phrases", "cli_words", "field_words", "option_flags", "use_flags_of"]

PYTHON_ONLY_ADVICE: tuple[tuple[str, str], ...] = (
    ("api_key='hs_...' to the client", "--api-key hs_..."),
    (", e.g. api_key=key.strip()", ""),  # the key of --api-key or the environment: nothing to call
    (", or pass verify=... (trust_env=False ignores it)", ""),  # no CLI flag: fixing or unsetting is the way
    ("Fix it, or pass trust_env=False.", "Fix or unset it, or pass --proxy URL."),  # --proxy: the env is not read
    ("(set max_tokens= to make", "(set --max-tokens, or max_tokens in each line, to make"),
    ("(batch(check_quota=False))", "(holysheep batch --no-quota-check)"),  # also what `holysheep quota` says
    ("(or api_key=)", "(or --api-key)"),
    ("(client.models.list() shows what is served) and the base_url", "('holysheep models' shows what is served) "
     "and --base-url"),
    ("use method='lora'", "use --train lora"),  # plan: `--method` is a hidden alias
    ("Add one with holysheep.pricing.set_price(model, input_per_m=..., output_per_m=...).",  # plan --api-model
     "Name a model of the price catalog (docs/hardware.md, API prices)."),
)
"""Library advice that has no one-to-one flag, as the CLI words it (library text, CLI text); applied before
the flag table."""

_command_flags: dict[str, str] = {}


def use_flags_of(parser: argparse.ArgumentParser | None) -> None:
    """Translate with the running sub-command's own flags too (``plan``'s ``max_gpus`` is ``--max-gpus``)."""
    _command_flags.clear()
    for action in parser._actions if parser is not None else ():
        longs = [o for o in action.option_strings if o.startswith("--")]
        if longs and action.dest not in ("help", "version"):
            _command_flags.setdefault(action.dest.removeprefix("g_"), longs[0])
            for flag in longs:  # an alias names its own option too: plan's `--seq-len` for `seq_len`
                _command_flags.setdefault(flag[2:].replace("-", "_"), flag)


def option_flags() -> dict[str, str]:
    """Python option (as a message writes it: ``resume``, ``check_quota=False``) -> CLI flag (``--resume``)."""
    return {**_batch_flags(), **_command_flags}


def field_words(text: str, field: str | None) -> str:
    """An error about the argument ``field`` (`InvalidRequestError.field`) whose message begins with its
    Python name (``max_gpus must be ...``) begins with the CLI flag instead (``--max-gpus must be ...``)."""
    flag = option_flags().get(field) if field else None
    if flag and field and re.match(rf"{re.escape(field)}\b(?![.\[=])", text):
        return flag + text[len(field):]
    return text


@functools.cache
def _connection_names() -> frozenset[str]:
    """``api_key``, ``base_url``, ...: the client options every networked command has a flag for."""
    from holysheep.cli._connection_flags import CONNECTION_OPTIONS

    return frozenset(flag[2:].replace("-", "_") for flag, _ in CONNECTION_OPTIONS)


@functools.cache
def _batch_flags() -> dict[str, str]:
    from holysheep.cli._batch_flags import FLAG_SCOPES, PYTHON_NAMES

    table = {dest: flag.split("/")[-1] for dest, (flag, _) in FLAG_SCOPES.items() if flag.startswith("-")}
    for dest, python in PYTHON_NAMES.items():
        table[python] = table.pop(dest)
    return table


def _flag(name: str, value: str = "") -> str | None:
    table = option_flags()
    return table.get(f"{name}={value}") or table.get(name)


def cli_phrases(text: str) -> str:
    """``text`` with the library's advice that has no one-to-one flag (`PYTHON_ONLY_ADVICE`) in the CLI's
    words, and nothing else changed: for a result line's own error, which speaks of the JSONL line."""
    for python, cli in PYTHON_ONLY_ADVICE:
        text = text.replace(python, cli)
    return text


def cli_words(text: str, *, report: bool = False) -> str:
    """``text`` with every Python option it names written as the CLI flag; anything else is left as it is.
    A ``report`` (`holysheep plan`'s, whose labels are the planner's words: ``seq_len 2048``) has only its
    advice translated (``at seq_len=128``), not the names it mentions."""
    text = cli_phrases(text)
    if "=" not in text and "_" not in text:
        return text

    def keep_flag(m: re.Match[str]) -> str:  # `--flag X (name=X)` / `name=X (--flag X)`: the flag alone
        return m.group("flag") if _flag(m.group("name")) else m.group(0)

    # `prices={...} (note), or --price ...`: the Python spelling offered next to the flag goes
    text = re.sub(r"\b(?P<name>\w+)=\{[^{}]*\}(?:\s*\([^()]*\))?,?\s+or\s+(?P<flag>--)", keep_flag, text)
    text = re.sub(r"(?P<flag>--[\w-]+(?: [^\s()]+)?) \((?P<name>\w+)=[^()]*\)", keep_flag, text)
    text = re.sub(r"\b(?P<name>\w+)=\S*?\s*\((?P<flag>--[^()]*)\)", keep_flag, text)
    text = re.sub(r"\b(?P<name>\w+)=\s*/\s*(?P<flag>--[\w-]+)", keep_flag, text)

    def assignment(m: re.Match[str]) -> str:  # what is left: `check_quota=False`, `max_cost_usd=$1`
        name, value = m.group("name"), m.group("value")
        flag = _flag(name, value)
        if flag is None:
            return m.group(0)
        return flag if value == "True" or f"{name}={value}" in option_flags() else f"{flag} {value}"

    def bare(m: re.Match[str]) -> str:  # `drop require_quota`; `max_cost_usd needs a price`; `in api_key`
        name = m.group("name")
        # an engine or connection option, or one of the command's own (plan's `zero_stage`), never a request
        # field such as max_tokens
        option = name in BATCH_OPTION_NAMES or name in _connection_names() or (
            not report and name in _command_flags and name not in CHAT_PARAM_NAMES)
        flag = _flag(name) if option or m.group("verb") else None
        return f"{m.group('verb') or ''}{flag or name}"

    text = re.sub(r"(?<![\w.\[-])(?P<name>[a-z]\w*)=(?P<value>True|False|[^\s,;:()]+)", assignment, text)
    return re.sub(r"(?P<verb>\b(?:drop|pass|set|use) )?(?<![\w.\[-])(?P<name>[a-z]+_\w+)\b(?!=)", bare, text)
