"""Front ends of the interactive session: a prompt_toolkit prompt, or plain lines when stdin is no terminal.

The prompt stays on screen the whole session; everything else is printed
above it. Its bottom area shows the text the model is producing and the
team's status; both are redrawn when the chat reports a change, never on a
timer. An open question replaces the prompt (what was typed is kept) and
goes away by itself when it is answered elsewhere.
"""

from __future__ import annotations

import asyncio
import select
import signal
import sys
import time
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.application import Application, get_app
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.patch_stdout import patch_stdout

from swarm.core.text import for_terminal
from swarm.errors import SwarmError
from swarm.interactive.chat import Chat
from swarm.interactive.commands import EXIT, Commands
from swarm.interactive.questions import LEAD_ASKER, PersonAnswer, Question

DOUBLE_CTRL_C = 2.0
"""Seconds within which a second Ctrl-C at an empty prompt ends the session."""
PLAIN_WAIT = 0.2
_QUESTION, _WITHDRAWN, _EXIT = "\x00question", "\x00withdrawn", "\x00exit"


def parse_reply(text: str, kind: str) -> PersonAnswer | None:
    """``y`` / ``a`` / ``n [reason]`` (or 1 / 2 / 3, yes / always / no); None when it is none of them."""
    word, _, rest = text.strip().partition(" ")
    choice = {"y": "approve", "yes": "approve", "1": "approve", "a": "always", "always": "always", "2": "always",
              "n": "deny", "no": "deny", "3": "deny"}.get(word.lower())
    if choice is None or (kind == "plan" and choice == "always"):
        return None
    return PersonAnswer(choice, rest.strip() or None)  # type: ignore[arg-type]


def question_text(question: Question) -> tuple[str, str, str]:
    """The question's header, body and the line of choices."""
    who = "The lead (you)" if question.asker == LEAD_ASKER else question.asker
    if question.kind == "plan":
        return (f"{who} asks you to approve a plan", question.plan,
                "[y] approve  [n FEEDBACK] reject")
    always = f"  [a] always ({question.rule})" if question.rule else ""
    return (f"{who} wants to use {question.tool}: {question.what}", "", f"[y] allow{always}  [n REASON] deny")


class Terminal:
    """The prompt_toolkit front end."""

    def __init__(self, chat: Chat, commands: Commands, history: Path) -> None:
        self.chat = chat
        self.commands = commands
        self.prompt = PromptSession[str](history=FileHistory(str(history)), key_bindings=self._keys(),
                                         bottom_toolbar=self._toolbar, refresh_interval=0)
        self.answers = PromptSession[str](key_bindings=self._keys(), bottom_toolbar=self._toolbar,
                                          refresh_interval=0)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._asking: Question | None = None
        self._saved = ""
        self._last_ctrl_c = 0.0
        self._leaving = False

    def run(self) -> None:
        asyncio.run(self._main())

    def wake(self) -> None:
        """Something changed (from any thread): redraw, or swap the prompt for a question."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._changed)

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        # Ctrl-C is a key while a prompt reads the terminal; between two prompts it is a signal: same meaning.
        # The prompts leave SIGINT alone (handle_sigint=False): prompt_toolkit's own handling ends by
        # removing this handler, and a Ctrl-C just as a turn ended then left the session at once.
        self._loop.add_signal_handler(signal.SIGINT, self._ctrl_c, None)
        try:
            with patch_stdout(raw=True):
                while not self._leaving:
                    question = self.chat.desk.current()
                    if question is not None:
                        if await self._ask(question) == _EXIT:
                            return
                        continue
                    try:
                        self.prompt.app.erase_when_done = False
                        text = await self.prompt.prompt_async("› ", default=self._saved, handle_sigint=False)
                    except EOFError:
                        return
                    if text == _EXIT:
                        return
                    if text in (_QUESTION, _WITHDRAWN):
                        continue
                    self._saved = ""
                    if self._handle(text):
                        return
        finally:
            self._loop.remove_signal_handler(signal.SIGINT)
            self._loop = None

    def _handle(self, text: str) -> bool:
        """Send what was typed; True when it asks to leave."""
        if not text.strip():
            return False
        if text.strip() == EXIT:
            return True
        if self.commands.handle(text):
            return False
        if self.chat.focus.viewing is not None:
            try:
                self.chat.focus.tell(text)
            except SwarmError as exc:
                self.chat.view.warn(f"not sent: {exc}")
        else:
            self.chat.submit(text)
        return False

    async def _ask(self, question: Question) -> str:
        self._asking = question
        header, body, choices = question_text(question)
        self.chat.view.question(header, body)
        try:
            while True:
                try:
                    self.answers.app.erase_when_done = False
                    text = await self.answers.prompt_async(f"{for_terminal(choices)} › ", handle_sigint=False)
                except EOFError:
                    return _EXIT
                if text in (_EXIT, _WITHDRAWN):
                    return text
                if text == _QUESTION:
                    continue
                reply = parse_reply(text, question.kind)
                if reply is None:
                    self.chat.view.warn(f"answer with {choices}")
                    continue
                self.chat.answer(question, reply)
                self.chat.view.note({"approve": "allowed", "always": f"allowed always ({question.rule})",
                                     "deny": "denied"}[reply.choice] if question.kind == "permission"
                                    else ("approved" if reply.choice != "deny" else "rejected"))
                return text
        finally:
            self._asking = None

    def leave(self) -> bool:
        """Leave as ``/exit`` does, from a signal handler or any thread (SIGTERM, the terminal closed).

        True when the prompt loop runs and now ends; False when it does not
        run (the caller ends the session its own way).
        """
        loop = self._loop
        if loop is None or loop.is_closed():
            return False
        loop.call_soon_threadsafe(self._leave, None)
        return True

    def _ctrl_c(self, app: Application[str] | None) -> None:
        """Stop the lead's turn; with none running, a second Ctrl-C within ``DOUBLE_CTRL_C`` s leaves. While a
        teammate is viewed, stop that teammate's turn instead (never the lead's, never leaving)."""
        if self.chat.focus.viewing is not None:
            self.chat.view.note(self.chat.focus.interrupt())
            return
        if self.chat.interrupt():
            self.chat.view.note("interrupting the lead's turn")
            return
        now = time.monotonic()
        if now - self._last_ctrl_c > DOUBLE_CTRL_C:
            self._last_ctrl_c = now
            self.chat.view.note("Ctrl-C again to shut the team down and leave (or /exit)")
            return
        self._leave(app)

    def _leave(self, app: Application[str] | None) -> None:
        self._leaving = True
        app = app or self._active()
        if app is not None and not app.is_done:
            app.exit(result=_EXIT)

    def _active(self) -> Application[str] | None:
        for session in (self.prompt, self.answers):
            if session.app.is_running:
                return session.app
        return None

    def _changed(self) -> None:
        app = self._active()
        if app is None or app.is_done:  # gone, or already leaving with a result
            return
        if self._asking is None and self.chat.desk.current() is not None:
            self._saved = app.current_buffer.text
            app.erase_when_done = True  # the prompt comes back after the question, with what was typed
            app.exit(result=_QUESTION)
        elif self._asking is not None and self._asking not in self.chat.desk.open():
            app.erase_when_done = True
            app.exit(result=_WITHDRAWN)
        else:
            app.invalidate()

    def _toolbar(self) -> FormattedText | None:
        parts: list[tuple[str, str]] = []
        preview = self.chat.view.preview()
        if preview:
            parts.append(("", preview + "\n"))
        if self.chat.busy.is_set():
            parts.append(("bold", "lead working… (Ctrl-C stops it)"))
            if self.chat.status:
                parts.append(("", "\n"))
        if self.chat.status:  # teammates' names and task subjects: made safe like every other text shown
            parts.append(("", for_terminal(self.chat.status)))
        viewing = self.chat.focus.viewing
        if viewing or self.chat.status:  # which view is active, once there is a team to switch to
            parts.append(("", "\n") if parts else ("", ""))
            parts.append(("reverse", for_terminal(f" view: {viewing} — typing goes to {viewing}; Ctrl-T next, "
                                                  "/view back ") if viewing else " view: lead (Ctrl-T: a teammate's) "))
        return FormattedText(parts) if parts else None

    def _keys(self) -> KeyBindings:
        keys = KeyBindings()

        @keys.add("c-c")
        def _(event: KeyPressEvent) -> None:
            buffer = event.app.current_buffer
            if buffer.text:
                buffer.reset()
                return
            self._ctrl_c(event.app)

        @keys.add("c-d")
        def _(event: KeyPressEvent) -> None:
            if not event.app.current_buffer.text:
                event.app.exit(result=_EXIT)

        @keys.add("c-o")
        def _(event: KeyPressEvent) -> None:
            self.chat.view.details()

        @keys.add("c-t")
        def _(event: KeyPressEvent) -> None:
            try:
                self.chat.focus.next()
            except SwarmError as exc:
                self.chat.view.warn(str(exc))

        @keys.add("escape", "enter")
        def _(event: KeyPressEvent) -> None:
            event.app.current_buffer.insert_text("\n")

        @keys.add("enter", filter=Condition(lambda: get_app().current_buffer.text.endswith("\\")))
        def _(event: KeyPressEvent) -> None:
            buffer = event.app.current_buffer
            if buffer.document.text_before_cursor.endswith("\\"):
                buffer.delete_before_cursor(1)
            buffer.insert_text("\n")

        return keys


class PlainLines:
    """stdin is not a terminal: each line is a prompt (or a question's answer); end of input ends the session."""

    def __init__(self, chat: Chat, commands: Commands) -> None:
        self.chat = chat
        self.commands = commands
        self._asked: Question | None = None

    def run(self) -> None:
        while True:
            question = self.chat.desk.current()
            if question is not None and question is not self._asked:
                header, body, choices = question_text(question)
                self.chat.view.question(f"{header} — {choices}", body)
                self._asked = question
            if not select.select([sys.stdin], [], [], PLAIN_WAIT)[0]:
                continue
            line = sys.stdin.readline()
            if not line:
                self._drain()
                return
            text = line.rstrip("\n")
            if question is not None and question in self.chat.desk.open():
                reply = parse_reply(text, question.kind)
                if reply is not None:
                    self.chat.answer(question, reply)
                    continue
            if text.strip() == EXIT:
                return
            if text.strip() and not self.commands.handle(text):
                if self.chat.focus.viewing is not None:
                    try:
                        self.chat.focus.tell(text)
                    except SwarmError as exc:
                        self.chat.view.warn(f"not sent: {exc}")
                    continue
                self.chat.view.you(text)
                self.chat.submit(text)

    def _drain(self) -> None:
        """End of input: let the lead finish what it was asked (and what its team sends meanwhile)."""
        while self.chat.busy.is_set() or not self.chat.inputs.empty():
            time.sleep(PLAIN_WAIT)
