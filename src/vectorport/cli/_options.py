"""A command's flags derived from its run options (:mod:`vectorport._options`).

Each field of a run-options dataclass that the command line offers becomes one typer option:
``--`` plus the field name with dashes (``batch_size`` → ``--batch-size``) unless the command
renames it, a ``--x/--no-x`` pair for a flag that defaults to on, the field's help text and
minimum. The library declares the options once; the CLI only names them.
"""

from __future__ import annotations

import dataclasses
import inspect
import shlex
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.models import OptionInfo

from .._options import RunOptions
from ..engine._progress import ProgressMode
from ..engine._transform import MetadataPolicy
from ..exceptions import Action, Advice, Call, Step, Wording

__all__ = [
    "FLAGS",
    "OPTIONAL_VALUES",
    "expand_optional_values",
    "option_parameters",
    "record_flags",
    "with_options",
]

_TYPES: dict[str, Any] = {
    "bool": bool,
    "bool | None": bool | None,
    "int": int,
    "int | None": int | None,
    "float": float,
    "float | None": float | None,
    "str": str,
    "str | None": str | None,
    "str | os.PathLike[str] | None": Path | None,
    "MetadataPolicy": MetadataPolicy,
    "ProgressMode": ProgressMode | None,
    "tuple[int, int]": str | None,
}
"""A field's declared type → the type the command line parses (a shard is parsed by the options)."""


_FLAGS: dict[str, tuple[str, str | None]] = {}
"""Each option field the command line offers → its flag and, for a switch, the flag that turns
it off, as the commands derived them (filled as each command is declared)."""


_CREATE = (
    "`vectorport ingest PATH URL` (--embedder and --metric set its spec) or `vectorport migrate SRC URL`"
)

_STEPS: dict[Action, str] = {
    Action.ADOPT: f"write its first vectors with {_CREATE}",
    Action.CREATE: f"create it with {_CREATE}",
    Action.CREATE_TABLE: f"create it with {_CREATE}",
    Action.CREATE_THERE: f"create the collection there with {_CREATE}",
    Action.CREATE_WITH_INDEX: f"create it with {_CREATE}",
    Action.NAME_METRIC: "add metric=cosine (or euclidean, dot) to the URL (searches are then exact)",
    Action.REINSTALL_CAPTURE: "sync --teardown-capture SOURCE, then sync --setup-capture SOURCE",
    Action.REMOVE_CAPTURE: "sync --teardown-capture",
    Action.SCHEDULE_SYNC: "run sync --every 30s",
    Action.SETUP_CAPTURE: "run vectorport sync --setup-capture {subject} first",
}
"""Each step as the command line takes it: the library's advice names keyword arguments
(``connect(url, dimension=…)``) and store methods (``setup_capture()``); on the command line
collections are created by the commands that write one, and change capture by ``sync``'s own
flags. ``{subject}`` is the step's subject."""


class _FlagWording:
    """Advice as the command line says it, from :data:`_FLAGS`: ``metadata_policy='flatten'`` is
    ``--metadata-policy flatten``, ``resume=True`` ``--resume``, ``checkpoint=`` ``--checkpoint``,
    ``verify=False`` ``--no-verify``, ``text_key=None`` ``no --text-key``; a call of a command's
    function (``vectorport.sync('a', 'b')``) is its command line (``vectorport sync a b``); a
    step is the command that takes it (:data:`_STEPS`). An option the command line does not
    offer keeps its Python wording.

    >>> from vectorport.exceptions import Advice, Advised
    >>> _FLAGS.update({"metadata_policy": ("--metadata-policy", None), "verify": ("--verify", "--no-verify")})
    >>> policy, verify = Advice("metadata_policy", "flatten"), Advice("verify", False)
    >>> Advised.of("pass {}, or {}", policy, verify).worded(FLAGS)
    'pass --metadata-policy flatten, or --no-verify'
    >>> _FLAGS.update({"text_key": ("--text-key", None)})
    >>> was, has = Advice("text_key", None), Advice("text_key", "title")
    >>> Advised.of("it records {}, this run has {}", was, has).worded(FLAGS)
    'it records no --text-key, this run has --text-key title'
    """

    def option(self, advice: Advice) -> str:
        flags = _FLAGS.get(advice.option)
        if flags is None:
            return str(advice)
        on, off = flags[0].split()[0], flags[1]
        value = advice.plain
        if value is ... or value is True:
            return on
        if value is False:
            return off or f"no {on}"
        if value is None:
            return off or f"no {on}"
        return f"{on} {value}"

    def call(self, call: Call) -> str:
        words = shlex.join(["vectorport", *call.command.split(), *call.args])
        return " ".join([words, *map(self.option, call.options)])

    def step(self, step: Step) -> str:
        words = _STEPS.get(step.action)
        return str(step) if words is None else words.format(subject=step.subject)


def record_flags(callback: Callable[..., Any]) -> None:
    """Add the flags of a command declared by hand (its parameters' ``typer.Option``) to what
    :data:`FLAGS` says, so advice naming one of its options (``serve='URL'``, ``embedder=``)
    is said as its flag; a ``--no-X`` switch beside an option ``--X`` is that option's off
    flag (``embedder=None`` is ``--no-embedder``). Options derived from run options keep
    the flags they were derived with."""
    hints = typing.get_type_hints(callback, include_extras=True)
    declared: dict[str, str] = {}
    for name, param in inspect.signature(callback).parameters.items():
        infos = [param.default, *getattr(hints.get(name), "__metadata__", ())]
        for info in infos:
            if isinstance(info, OptionInfo):
                # in ``Annotated[T, typer.Option("--x")]`` typer takes the first flag as ``default``
                given = [info.default, *(info.param_decls or ())]
                decls = [d for d in given if isinstance(d, str) and d.startswith("--")]
                if decls:
                    declared[name] = decls[0]
    for name, flag in declared.items():
        on, _, off = flag.partition("/")
        if not off and declared.get(f"no_{name}") == f"--no-{on[2:]}":
            off = f"--no-{on[2:]}"
        known = _FLAGS.setdefault(name, (on, off or None))
        if off and known == (on, None):  # another command offers the option without its switch
            _FLAGS[name] = (on, off)


FLAGS: Wording = _FlagWording()
"""The command line's wording of advice: the flags its commands derived from the run options,
and the commands that take each step."""


def option_parameters(
    cls: type[RunOptions], names: Mapping[str, str], defaults: Mapping[str, Any]
) -> list[inspect.Parameter]:
    """One keyword parameter per command-line field of ``cls`` (``names``: flag renames such as
    ``{"plan_only": "--plan"}``; ``defaults``: the CLI's own defaults, e.g. ``progress=None``:
    decided by whether stderr is a terminal)."""
    out = []
    for f in cls.declared():
        meta = f.metadata
        if not meta["cli"]:
            continue
        flag = names.get(f.name) or "--" + f.name.replace("_", "-")
        default = defaults.get(f.name, None if f.type == "tuple[int, int]" else f.default)
        kind = _TYPES[str(f.type)]
        if kind is bool and default is None:
            kind = bool | None  # tri-state: the command decides when neither flag is given
        if kind in (bool, bool | None) and "/" not in flag and default is not False:
            flag = f"{flag}/--no-{flag[2:]}"
        on, _, off = flag.partition("/")
        _FLAGS.setdefault(f.name, (on, off or None))
        extra: dict[str, Any] = {}
        if meta.get("minimum") is not None:
            extra["min"] = meta["minimum"]
        if meta.get("metavar"):
            extra["metavar"] = meta["metavar"]
        if kind is MetadataPolicy:
            extra.update(case_sensitive=False, metavar="POLICY")
        if kind == ProgressMode | None:
            extra.update(case_sensitive=False, metavar="MODE")
        annotation = Annotated[kind, typer.Option(*flag.split(" "), help=meta["help"], **extra)]  # type: ignore[valid-type]
        out.append(
            inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
        )
    return out


def with_options(
    cls: type[RunOptions], names: Mapping[str, str], defaults: Mapping[str, Any]
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a command function the flags of ``cls`` beside its own parameters: it is called
    with its own keyword arguments plus ``options`` (a dict of the option fields' values)."""
    fields = {f.name for f in dataclasses.fields(cls)}

    def wrap(fn: Callable[..., None]) -> Callable[..., None]:
        sig = inspect.signature(fn)
        resolved = typing.get_type_hints(fn, include_extras=True)
        own = [p.replace(annotation=resolved[p.name]) for p in sig.parameters.values() if p.name != "options"]
        hints = {p.name: p.annotation for p in own}

        def command(*args: Any, **kwargs: Any) -> None:
            options = {k: kwargs.pop(k) for k in list(kwargs) if k in fields}
            fn(*args, **kwargs, options=options)

        derived = option_parameters(cls, names, defaults)
        positional = [p for p in own if p.default is inspect.Parameter.empty]
        keyword = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own if p not in positional]
        command.__signature__ = sig.replace(parameters=[*positional, *derived, *keyword])  # type: ignore[attr-defined]
        command.__annotations__ = {**hints, **{p.name: p.annotation for p in derived}, "return": None}
        command.__doc__ = fn.__doc__
        command.__name__ = fn.__name__
        return command

    return wrap


OPTIONAL_VALUES: dict[str, tuple[str, str]] = {"--progress": ("bar", "--no-progress")}
"""Options whose value may be left out: flag → (its value when bare, the flag meaning ``none``).
typer's parser has no options with an optional value (click's ``flag_value``), so a command
rewrites its arguments before parsing: ``--progress`` alone (or before a URL, a path or another
flag) is ``--progress=bar``, ``--no-progress`` is ``--progress=none``, and a word after it is
its value (``--progress json``; a misspelt ``--progress jsn`` is refused naming the choices)."""


def expand_optional_values(args: Sequence[str], flags: Mapping[str, tuple[str, str]]) -> list[str]:
    """``args`` with each optional-valued flag of ``flags`` given its value explicitly.

    >>> args = ["--progress", "memory://a", "--no-progress", "--progress", "json"]
    >>> expand_optional_values(args, OPTIONAL_VALUES)
    ['--progress=bar', 'memory://a', '--progress=none', '--progress', 'json']
    """
    negations = {neg: flag for flag, (_, neg) in flags.items()}
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--":
            return out + list(args[i:])
        if arg in negations:
            out.append(f"{negations[arg]}=none")
        elif arg in flags:
            following = args[i + 1] if i + 1 < len(args) else ""
            out.append(arg if following.isalpha() else f"{arg}={flags[arg][0]}")
        else:
            out.append(arg)
    return out
