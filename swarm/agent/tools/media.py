"""What Read gives for a file that is not text: an image block, or a PDF (whole, or some of its pages).

A file's kind is told by its first bytes, not its name. An image goes to the
model as it is (base64, within the API's 5 MB per image); a PDF goes as a
``document`` block, the file itself when it is short, else only the pages the
model asks for (``pages``, as in Claude Code's Read), cut out with pypdf. The
API's size limits are ``agent.output_cap``'s, which the executor checks again
for every tool's result.
"""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path
from typing import Final

from swarm.agent.output_cap import ResultRefused, ToolOutput, check_document_size, check_image_size
from swarm.agent.tool_api.context import ToolError
from swarm.models.messages import DocumentBlock, DocumentSource, ImageBlock, ImageMediaType, ImageSource, TextBlock

PDF: Final = "application/pdf"
MAX_WHOLE_PDF_PAGES = 10
"""A PDF with more pages than this must be read with ``pages``."""
MAX_PAGES_PER_READ = 20
"""Most pages one Read of a PDF returns."""
_PAGES = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")


def media_type(head: bytes) -> str | None:
    """The media type of a file beginning with ``head`` when Read sends it as a block (an image, a PDF), else None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head.startswith(b"%PDF-"):
        return PDF
    return None


def read_image(path: Path, size: int, kind: ImageMediaType) -> ToolOutput:
    """``path`` as an image block; ToolError if the API would refuse it for its size."""
    try:
        check_image_size(size, str(path))
    except ResultRefused as exc:
        raise ToolError(str(exc)) from exc
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return [ImageBlock(source=ImageSource(media_type=kind, data=data))]


def read_pdf(path: Path, size: int, pages: str | None) -> ToolOutput:
    """``path`` as a document block: the whole file (at most ``MAX_WHOLE_PDF_PAGES`` pages) or ``pages`` of it."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(path)
        count = len(reader.pages)
    except (PyPdfError, ValueError, KeyError) as exc:
        raise ToolError(f"{path} is not a PDF Read can open: {exc}") from exc
    try:
        if pages is None:
            if count > MAX_WHOLE_PDF_PAGES:
                raise ToolError(f"{path} has {count} pages, more than the {MAX_WHOLE_PDF_PAGES} Read returns whole; "
                                f"give pages (e.g. pages=\"1-{MAX_PAGES_PER_READ}\"), up to {MAX_PAGES_PER_READ} "
                                "pages a Read")
            check_document_size(size, str(path))
            data, label = path.read_bytes(), f"{count} page{'s' if count != 1 else ''}"
        else:
            first, last = page_range(pages, count, path)
            writer = PdfWriter()
            for index in range(first - 1, last):
                writer.add_page(reader.pages[index])
            out = io.BytesIO()
            writer.write(out)
            data, label = out.getvalue(), f"pages {first}-{last} of {count}"
            check_document_size(len(data), f"pages {pages} of {path}")
    except ResultRefused as exc:
        raise ToolError(str(exc)) from exc
    except PyPdfError as exc:
        raise ToolError(f"cannot cut pages {pages} out of {path}: {exc}") from exc
    document = DocumentBlock(source=DocumentSource(data=base64.b64encode(data).decode("ascii")))
    return [TextBlock(text=f"PDF {path}: {label}"), document]


def page_range(pages: str, count: int, path: Path) -> tuple[int, int]:
    """The first and last page (1-based) ``pages`` names (``"3"``, ``"1-5"``); ToolError if it names none of ``path``."""
    match = _PAGES.fullmatch(pages)
    if match is None:
        raise ToolError(f"pages {pages!r} is not a page or a range of pages (e.g. \"3\" or \"1-5\")")
    first = int(match[1])
    last = int(match[2]) if match[2] else first
    if first < 1 or last < first:
        raise ToolError(f"pages {pages!r} is not a range of pages: they count from 1, the first before the last")
    if last > count:
        raise ToolError(f"{path} has {count} pages; pages {pages!r} asks for page {last}")
    if last - first + 1 > MAX_PAGES_PER_READ:
        raise ToolError(f"pages {pages!r} is {last - first + 1} pages; read at most {MAX_PAGES_PER_READ} at a time")
    return first, last
