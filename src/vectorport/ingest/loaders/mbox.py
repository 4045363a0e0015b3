"""Mail (``.mbox`` archives and single ``.eml`` messages): one section per message, titled by
its subject. Quoted replies (``>`` lines and the "On … wrote:" line before them), forwarded
"Original Message" tails and signatures after the ``-- `` delimiter are stripped, so a thread
is indexed once, not once per reply."""

from __future__ import annotations

import email
import email.policy
import re
from email.message import EmailMessage

from ..documents import Block, BlockKind, Document
from ._text import decode, paragraphs
from .html import html_to_blocks

__all__ = ["SUFFIXES", "clean_body", "load", "split_mbox"]

SUFFIXES = (".mbox", ".eml")

_FROM_LINE = re.compile(rb"^From [^\n]*\n", re.MULTILINE)
_ATTRIBUTION = re.compile(r"^(On .{0,200}wrote:|.{0,120} (wrote|writes):)$", re.IGNORECASE)
_ORIGINAL = re.compile(r"^-{2,}\s*(Original Message|Forwarded message)\s*-{2,}", re.IGNORECASE)
_UNESCAPE = re.compile(rb"^>(>*From )", re.MULTILINE)


def split_mbox(data: bytes) -> list[bytes]:
    """The raw messages of an mbox file (mboxo/mboxrd ``From `` separators)."""
    if not data.startswith(b"From "):
        return [data] if data.strip() else []
    starts = [m.start() for m in _FROM_LINE.finditer(data)]
    out = []
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(data)
        header_end = data.index(b"\n", start) + 1
        out.append(data[header_end:end])
    return out


def clean_body(text: str) -> str:
    """Drop quoted replies, attribution lines, forwarded tails and the signature.

    >>> clean_body("Yes.\\n\\nOn Mon, Bob wrote:\\n> old\\n> text\\n-- \\nAlice\\n555-1234")
    'Yes.'
    """
    kept: list[str] = []
    lines = text.split("\n")
    for i, line in enumerate(lines):
        stripped = line.rstrip()
        if stripped in ("-- ", "--") or line == "-- ":
            break
        if _ORIGINAL.match(stripped.strip()):
            break
        if stripped.lstrip().startswith(">"):
            continue
        nxt = next((x for x in lines[i + 1 :] if x.strip()), "")
        if _ATTRIBUTION.match(stripped.strip()) and nxt.lstrip().startswith(">"):
            continue
        kept.append(stripped)
    return "\n".join(kept).strip()


def _body(msg: EmailMessage) -> tuple[str, bool]:
    part = msg.get_body(preferencelist=("plain", "html"))
    if part is None:
        return "", False
    try:
        content = part.get_content()
    except (LookupError, UnicodeDecodeError):
        payload = part.get_payload(decode=True)
        content = decode(payload) if isinstance(payload, bytes) else str(payload or "")
    if not isinstance(content, str):
        content = decode(content) if isinstance(content, bytes) else ""
    return content.replace("\r\n", "\n"), part.get_content_type() == "text/html"


def load(data: bytes, source: str, doc_hash: str) -> Document:
    """Read an mbox archive or one message.

    >>> raw = b"From a@x Mon Jan  1 00:00:00 2024\\nSubject: Hi\\nFrom: A <a@x>\\n\\nBody.\\n"
    >>> [b.text for b in load(raw, "m.mbox", "h").blocks]
    ['Hi', 'From: A <a@x>', 'Body.']
    """
    blocks: list[Block] = []
    title: str | None = None
    for raw in split_mbox(data):
        msg = email.message_from_bytes(_UNESCAPE.sub(rb"\1", raw), policy=email.policy.default)
        assert isinstance(msg, EmailMessage)
        subject = " ".join(str(msg.get("Subject", "") or "").split()) or "(no subject)"
        title = title or subject
        body, is_html = _body(msg)
        if is_html:
            texts = [b.text for b in html_to_blocks(body)[0]]
            body = "\n\n".join(texts)
        cleaned = clean_body(body)
        if not cleaned:
            continue
        blocks.append(Block(subject, BlockKind.HEADING, subject))
        sender = " ".join(str(msg.get("From", "") or "").split())
        date = " ".join(str(msg.get("Date", "") or "").split())
        header = ", ".join(x for x in (f"From: {sender}" if sender else "", date) if x)
        if header:
            blocks.append(Block(header, BlockKind.PARAGRAPH, subject))
        blocks.extend(Block(p, BlockKind.PARAGRAPH, subject) for p in paragraphs(cleaned))
    return Document(source, tuple(blocks), doc_hash, title, "mbox")
