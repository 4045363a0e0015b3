"""Names and text constants in vectorport's SQL, safe whatever characters they hold.

psycopg reads every ``%`` of a statement sent with parameters as a placeholder, quoted or not:
a table ``pct%s`` or a column ``k%(x)s`` rendered by :class:`psycopg.sql.Identifier` fails with
"query parameter missing" (or names the wrong relation, ``pct$1``). PostgreSQL's Unicode-escape
forms (``U&"pct\\0025s"``, ``U&'k\\0025(x)s'``) spell the same name without a ``%``, so the
statement is the same with parameters or without; any other name renders as psycopg renders it.

Every module of the backend builds names with :class:`Identifier` and text constants that can
hold a name with :class:`Literal`.

>>> from psycopg import sql
>>> sql.SQL("SELECT {} FROM {}").format(Identifier("k%(x)s"), Identifier("public", "t")).as_string()
'SELECT U&"k\\\\0025(x)s" FROM "public"."t"'
>>> Literal(["a", "b%s"]).as_string()
"ARRAY['a',U&'b\\\\0025s']"
"""

from __future__ import annotations

from collections.abc import Sequence

from psycopg import sql
from psycopg.abc import AdaptContext

__all__ = ["Identifier", "Literal"]


def _unicode_escaped(text: str, quote: str) -> bytes:
    """``text`` as a ``U&`` quoted name or string: ``\\`` doubled, the quote doubled, ``%`` as
    ``\\0025`` (PostgreSQL takes ``U&`` forms where standard_conforming_strings is on, its
    default since 9.1)."""
    body = text.replace("\\", "\\\\").replace(quote, quote * 2).replace("%", "\\0025")
    return f"U&{quote}{body}{quote}".encode()


class Identifier(sql.Identifier):
    """:class:`psycopg.sql.Identifier` that renders a name holding ``%`` in its ``U&`` form."""

    def as_bytes(self, context: AdaptContext | None = None) -> bytes:
        if not any("%" in part for part in self._obj):
            return super().as_bytes(context)
        return b".".join(
            _unicode_escaped(part, '"') if "%" in part else sql.Identifier(part).as_bytes(context)
            for part in self._obj
        )

    def object_name(self, context: AdaptContext | None = None) -> str:
        """The name as ``regclass`` and ``regprocedure`` read it from text (``to_regclass(%s)``),
        which knows no ``U&`` form: passed as a parameter, its ``%`` is no placeholder."""
        return sql.Identifier(*self._obj).as_string(context)


class Literal(sql.Literal):
    """:class:`psycopg.sql.Literal` that renders a string (or a list of strings) holding ``%``
    in its ``U&`` form."""

    def as_bytes(self, context: AdaptContext | None = None) -> bytes:
        value = self._obj
        if isinstance(value, str) and "%" in value:
            return _unicode_escaped(value, "'")
        if _strings_with_percent(value):
            parts = (Literal(item).as_bytes(context) for item in value)
            return b"ARRAY[" + b",".join(parts) + b"]"
        return super().as_bytes(context)


def _strings_with_percent(value: object) -> bool:
    return (
        isinstance(value, Sequence)
        and not isinstance(value, (str, bytes))
        and all(isinstance(item, str) for item in value)
        and any("%" in item for item in value)
    )
