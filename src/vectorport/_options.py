"""Run options as typed values, the mechanism every command's options share (``migrate``,
``sync``, ``export``, ``compare``): one frozen dataclass per command, each field declared with
:func:`option`.

A field's metadata says its help text, whether it may change between a run and its resume, and
the runners that can honour it. Everything else derives from the declaration: the command's
Python keyword arguments, the CLI's flags (:mod:`vectorport.cli._options` names them from the
field names), the resume-compatibility check (:meth:`RunOptions.fixed` recorded in a migration's
checkpoint or a sync's state, :meth:`RunOptions.check_fixed` when it is used again), the refusal of what a
runner cannot honour (:meth:`RunOptions.refused_by`) and the report's ``options`` section
(:meth:`RunOptions.to_dict`). The library knows no flag names and no state-file paths.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Demo(RunOptions):
...     COMMAND = "demo"
...     batch_size: int | None = option(None, "Records per write.", minimum=1)
...     mode: str = option("fast", "How.", resume="fixed", runners=("local",))
>>> Demo(mode="slow").fixed(), Demo(mode="slow").refused_by("ray")
({'mode': 'slow'}, ['mode'])
>>> Demo(batch_size=0)
Traceback (most recent call last):
...
vectorport.exceptions.ConfigurationError: batch_size must be positive, got 0
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar

from ._retry import RetryPolicy
from .exceptions import Advice, Advised, ConfigurationError

__all__ = ["RUNNERS", "RunOptions", "option"]

RUNNERS = ("local", "ray")


def option(
    default: Any,
    help: str,
    *,
    resume: str = "free",
    runners: tuple[str, ...] = RUNNERS,
    cli: bool = True,
    factory: bool = False,
    minimum: int | None = None,
    metavar: str | None = None,
    only: Mapping[str, tuple[Any, ...]] | None = None,
) -> Any:
    """A field of a run-options declaration.

    ``resume``: ``free`` (may change when a run is resumed) or ``fixed`` (recorded in the
    checkpoint; a resume with another value is refused). ``runners``: the runners that honour
    it; under any other a value other than the default is refused before any I/O. ``cli``:
    whether the command line offers it (objects such as a retry policy are Python only).
    ``minimum``: the smallest value (checked by the command line's parser too); ``metavar``: how
    help shows the value. ``only``: per runner, the only values it honours.
    """
    meta = {
        "help": help,
        "resume": resume,
        "runners": runners,
        "cli": cli,
        "minimum": minimum,
        "metavar": metavar,
        "only": dict(only or {}),
    }
    if factory:
        return field(default_factory=default, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class RunOptions:
    """What every command's options share: the checks, the resume rule, the report section."""

    COMMAND: ClassVar[str]
    WRITES_TARGET: ClassVar[bool] = False
    """The command writes its target through the target store's own writes (a runner asks the
    target's backend which processes may do that: :meth:`vectorport.BaseStore.processes`)."""

    def __post_init__(self) -> None:
        concurrency = getattr(self, "concurrency", 1)
        if concurrency < 1:
            raise ConfigurationError(f"concurrency must be at least 1, got {concurrency}")
        batch = getattr(self, "batch_size", None)
        if batch is not None and batch < 1:
            raise ConfigurationError(f"batch_size must be positive, got {batch}")
        for f in self.declared():
            # an enum field takes what its enum's parse accepts: a name (metadata_policy="flatten"),
            # or a bool for ProgressMode (True is a bar, False none)
            default = f.default
            if isinstance(default, Enum) and hasattr(default, "parse"):
                object.__setattr__(self, f.name, default.parse(getattr(self, f.name)))

    @classmethod
    def declared(cls) -> tuple[dataclasses.Field[Any], ...]:
        """The declaration: each field with its ``help``, ``resume``, ``runners`` and ``cli``;
        the keyword-only fields a base declares for several commands last, where the keyword
        arguments have them too."""
        return tuple(sorted(dataclasses.fields(cls), key=lambda f: bool(f.kw_only)))

    def fixed(self) -> dict[str, Any]:
        """The options a resumed run must share with the run it continues (JSON values)."""
        return {
            f.name: _json(getattr(self, f.name)) for f in self.declared() if f.metadata["resume"] == "fixed"
        }

    def check_fixed(self, recorded: Mapping[str, Any], kept_in: str, path: object, remedy: str) -> None:
        """Refuse this run when an option fixed between a run and the next over the same
        ``kept_in`` (``"checkpoint"``, ``"sync state"``) at ``path`` differs from what that run
        recorded there (``recorded``: its :meth:`fixed`; a name it lacks is not compared). The
        error names each changed option with both values, then ``remedy``: what to do instead.
        """
        now = self.fixed()
        changed = [name for name in now if name in recorded and recorded[name] != now[name]]
        if not changed:
            return
        fields = ", ".join(["{}"] * len(changed))
        was = Advised.of(fields, *(Advice(name, recorded[name]) for name in changed))
        has = Advised.of(fields, *(Advice(name, now[name]) for name in changed))
        raise ConfigurationError(
            Advised.of(
                "the {} {} records {}, this run has {}: {} cannot change between a {} run and the next "
                "over the same {}; {}",
                kept_in,
                path,
                was,
                has,
                ", ".join(changed),
                self.COMMAND,
                kept_in,
                remedy,
            )
        )

    def refused_by(self, runner: str) -> list[str]:
        """The options set away from their default that ``runner`` cannot honour."""
        out = []
        for f in self.declared():
            allowed = f.metadata["only"].get(runner)
            if allowed is not None and getattr(self, f.name) not in allowed:
                out.append(f.name)
            if runner in f.metadata["runners"]:
                continue
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            if getattr(self, f.name) != default:
                out.append(f.name)
        return out

    def to_dict(self) -> dict[str, Any]:
        """The report's ``options`` section (the same under every runner)."""
        return {f.name: _json(getattr(self, f.name)) for f in self.declared()}


def _json(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, os.PathLike | Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Mapping):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, RetryPolicy):
        return dataclasses.asdict(value)
    return value
