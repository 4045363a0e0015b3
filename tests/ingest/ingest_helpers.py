"""Helpers shared by the ingest tests (a uniquely named module: tests/ has no packages)."""

from __future__ import annotations

from pathlib import Path


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


def long_markdown(title: str, sections: int = 4, paragraphs: int = 3, words: int = 60) -> str:
    """Deterministic Markdown with distinct sentences (so chunks differ)."""
    out = [f"# {title}", ""]
    n = 0
    for s in range(sections):
        out += [f"## {title} part {s}", ""]
        for _ in range(paragraphs):
            sentence = []
            for w in range(words):
                n += 1
                sentence.append(f"{title.lower()}{n % 997}x{s}")
                if w % 12 == 11:
                    sentence[-1] += "."
            out += [" ".join(sentence) + ".", ""]
    return "\n".join(out)
