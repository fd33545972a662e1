"""What a tool result may be: capped in one place (the executor), and images and PDFs as content blocks.

Each test drives the real SDK against the fake Messages API, which validates
the tool_result blocks as the real API does.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel
from pypdf import PdfReader, PdfWriter

from swarm.agent.executor import execute
from swarm.agent.headless import run_headless
from swarm.agent.limits import Limits
from swarm.agent.output_cap import DEFAULT_RESULT_CHARS, MAX_IMAGE_BYTES
from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import AgentIdentity, ToolContext
from swarm.interactive.view import View
from swarm.models.anthropic_provider import AnthropicProvider
from swarm.models.messages import (
    DocumentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from swarm.models.scripted import content_text
from tests.fakes import FakeAnthropicServer
from tests.fakes.anthropic_server import conversation_error, text_reply, tool_use_reply, unmarked

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(256)) * 4
JPEG = b"\xff\xd8\xff\xe0" + bytes(range(256)) * 4


def _result_of(api: FakeAnthropicServer, index: int = 1) -> dict[str, Any]:
    """The one tool_result of request ``index`` (the one after the call)."""
    body = unmarked(api.requests[index].body)
    [result] = [b for b in body["messages"][-1]["content"] if b["type"] == "tool_result"]
    return result  # type: ignore[no-any-return]


def _read(api: FakeAnthropicServer, claude: AnthropicProvider, cwd: Path, **tool_input: Any) -> dict[str, Any]:
    api.enqueue(tool_use_reply("Read", tool_input, tool_id="toolu_r"), text_reply("done"))
    result = run_headless("read it", claude, cwd=cwd, limits=Limits())
    assert result.ok, result
    return _result_of(api)


def _pdf(pages: int) -> bytes:
    writer = PdfWriter()
    for number in range(pages):
        writer.add_blank_page(width=100 + number, height=100)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


# --- images and documents -----------------------------------------------------------


@pytest.mark.parametrize(("name", "data", "media_type"), [("shot.png", PNG, "image/png"),
                                                          ("photo.jpg", JPEG, "image/jpeg")])
def test_read_of_an_image_sends_an_image_block(tmp_path: Path, api: FakeAnthropicServer, claude: AnthropicProvider,
                                               name: str, data: bytes, media_type: str) -> None:
    (tmp_path / name).write_bytes(data)
    result = _read(api, claude, tmp_path, file_path=name)
    assert not result.get("is_error")
    [image] = [b for b in result["content"] if b["type"] == "image"]
    assert image["source"] == {"type": "base64", "media_type": media_type, "data": base64.b64encode(data).decode()}


def test_an_image_the_api_would_refuse_is_an_error_naming_the_limit(tmp_path: Path, api: FakeAnthropicServer,
                                                                    claude: AnthropicProvider) -> None:
    (tmp_path / "big.png").write_bytes(PNG + b"\x00" * MAX_IMAGE_BYTES)
    result = _read(api, claude, tmp_path, file_path="big.png")
    assert result["is_error"] and "5 MB" in result["content"]


def test_read_of_a_pdf_sends_the_pdf_as_a_document(tmp_path: Path, api: FakeAnthropicServer,
                                                   claude: AnthropicProvider) -> None:
    data = _pdf(3)
    (tmp_path / "spec.pdf").write_bytes(data)
    result = _read(api, claude, tmp_path, file_path="spec.pdf")
    [document] = [b for b in result["content"] if b["type"] == "document"]
    assert document["source"] == {"type": "base64", "media_type": "application/pdf",
                                  "data": base64.b64encode(data).decode()}


def test_read_with_pages_sends_only_those_pages(tmp_path: Path, api: FakeAnthropicServer,
                                                claude: AnthropicProvider) -> None:
    (tmp_path / "spec.pdf").write_bytes(_pdf(6))
    result = _read(api, claude, tmp_path, file_path="spec.pdf", pages="2-3")
    [document] = [b for b in result["content"] if b["type"] == "document"]
    reader = PdfReader(io.BytesIO(base64.b64decode(document["source"]["data"])))
    assert [float(p.mediabox.width) for p in reader.pages] == [101.0, 102.0]


def test_bad_pages_and_pages_past_the_end_are_errors(tmp_path: Path, api: FakeAnthropicServer,
                                                     claude: AnthropicProvider) -> None:
    (tmp_path / "spec.pdf").write_bytes(_pdf(2))
    (tmp_path / "a.txt").write_text("hi\n")
    api.enqueue(tool_use_reply("Read", {"file_path": "spec.pdf", "pages": "5"}, tool_id="toolu_1"),
                tool_use_reply("Read", {"file_path": "spec.pdf", "pages": "3-1"}, tool_id="toolu_2"),
                tool_use_reply("Read", {"file_path": "a.txt", "pages": "1"}, tool_id="toolu_3"),
                text_reply("done"))
    assert run_headless("read it", claude, cwd=tmp_path, limits=Limits()).ok
    past, backwards, not_pdf = (_result_of(api, i) for i in (1, 2, 3))
    assert past["is_error"] and "has 2 pages" in past["content"]
    assert backwards["is_error"] and "3-1" in backwards["content"]
    assert not_pdf["is_error"] and "PDF" in not_pdf["content"]


def test_a_long_pdf_read_whole_asks_for_pages(tmp_path: Path, api: FakeAnthropicServer,
                                             claude: AnthropicProvider) -> None:
    (tmp_path / "book.pdf").write_bytes(_pdf(30))
    result = _read(api, claude, tmp_path, file_path="book.pdf")
    assert result["is_error"] and "pages" in result["content"] and "30 pages" in result["content"]


# --- caps -----------------------------------------------------------------------------


def test_a_huge_read_is_refused_with_an_error_pointing_at_offset_and_limit(
        tmp_path: Path, api: FakeAnthropicServer, claude: AnthropicProvider) -> None:
    (tmp_path / "big.log").write_text("".join(f"line {n} " + "x" * 200 + "\n" for n in range(20_000)))
    result = _read(api, claude, tmp_path, file_path="big.log")
    assert result["is_error"]
    assert "offset" in result["content"] and "limit" in result["content"] and "tokens" in result["content"]
    assert len(result["content"]) < 1000


def test_a_4mb_bash_output_reaches_the_model_capped(tmp_path: Path, api: FakeAnthropicServer,
                                                    claude: AnthropicProvider) -> None:
    api.enqueue(tool_use_reply("Bash", {"command": "python3 -c \"print('y' * 4_000_000)\""}, tool_id="toolu_b"),
                text_reply("done"))
    assert run_headless("flood", claude, cwd=tmp_path, limits=Limits()).ok
    content = _result_of(api)["content"]
    assert len(content) <= DEFAULT_RESULT_CHARS + 200 and "truncated" in content


class _NoInput(BaseModel):
    pass


class _Flood(Tool[_NoInput]):
    """A tool that declares no cap and returns a megabyte."""

    name: ClassVar[str] = "Flood"
    description: ClassVar[str] = "floods"
    input_model: ClassVar[type[BaseModel]] = _NoInput

    def run(self, args: _NoInput, ctx: ToolContext) -> str:
        return "z" * 1_000_000


def test_a_tool_that_declares_no_cap_gets_the_default_cap(tmp_path: Path) -> None:
    ctx = ToolContext(AgentIdentity(cwd=tmp_path))
    result = execute(ToolUseBlock(id="t1", name="Flood", input={}), {"Flood": _Flood()}, ctx)
    assert isinstance(result.content, str)
    assert DEFAULT_RESULT_CHARS <= len(result.content) <= DEFAULT_RESULT_CHARS + 200
    assert "truncated" in result.content


# --- block results everywhere a result is read --------------------------------------------


def _image_result() -> ToolResultBlock:
    image = ImageBlock.model_validate({"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                   "data": base64.b64encode(PNG).decode()}})
    return ToolResultBlock(tool_use_id="t1", content=[TextBlock(text="shot.png"), image])


def test_a_block_result_round_trips_through_json_and_reads_as_text() -> None:
    message = Message(role="user", content=[_image_result()])
    again = Message.model_validate_json(message.model_dump_json())
    [block] = again.content
    assert isinstance(block, ToolResultBlock) and isinstance(block.content, list)
    assert isinstance(block.content[1], ImageBlock)
    assert block.text() == f"shot.png\n[image/png image, {len(PNG):,} bytes]"
    assert ToolResultBlock(tool_use_id="t2", content="plain").text() == "plain"
    assert "[image/png image" in content_text(again.content)
    document = DocumentBlock.model_validate({"type": "document", "source": {
        "type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}})
    assert ToolResultBlock(tool_use_id="t3", content=[document]).text() == "[application/pdf document, 5 bytes]"


def test_the_view_summarises_a_block_result_on_one_line(tmp_path: Path) -> None:
    lines: list[str] = []
    view = View(tmp_path, plain=True, write=lines.append)
    view.message(Message(role="assistant", content=[ToolUseBlock(id="t1", name="Read",
                                                                 input={"file_path": "shot.png"})]))
    [_, image] = _image_result().content  # type: ignore[misc]
    view.message(Message(role="user", content=[ToolResultBlock(tool_use_id="t1", content=[image])]))
    assert lines[-1].startswith("[1] Read") and lines[-1].endswith(f"→ ok: [image/png image, {len(PNG):,} bytes]")


def test_the_fake_api_checks_blocks_in_tool_results_as_the_api_does() -> None:
    def conversation(content: Any) -> list[dict[str, Any]]:
        return [{"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": content}]}]

    good = [{"type": "text", "text": "a"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}}]
    assert conversation_error(conversation(good)) is None
    assert conversation_error(conversation("plain")) is None
    bad_type = [{"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": "Qk0="}}]
    assert "media_type" in (conversation_error(conversation(bad_type)) or "")
    assert "tool_use" in (conversation_error(conversation([{"type": "tool_use", "id": "x", "name": "n",
                                                              "input": {}}])) or "")
    huge = [{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "A" * (MAX_IMAGE_BYTES + 4)}}]
    assert "5 MB" in (conversation_error(conversation(huge)) or "")
