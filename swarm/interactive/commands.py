"""Slash commands of the interactive session; anything else starting with ``/`` is a skill (or text).

Each command answers at once, even while the lead is working; ``/exit`` is
handled by the front end (it has to leave the prompt).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass

from swarm.agent.conversation import Conversation
from swarm.agent.tools.tasks import task_line
from swarm.agent.transcript import Transcript
from swarm.backends.tmux_client import socket_path_for
from swarm.core.names import LEAD_NAME
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore
from swarm.core.text import flat
from swarm.errors import SwarmError
from swarm.interactive.chat import Chat
from swarm.interactive.sessions import new_session
from swarm.models.base import ModelProvider

HELP = """\
/help              this list
/team              the team: each teammate's state, task, worktree; how to watch their panes
/tasks             the shared task list
/agents            agent types the lead can start (Agent subagent_type)
/skills            skills; run one with /NAME ARGS
/model [NAME]      the lead's model, or switch to NAME from the next turn
/details [N]       tool call N (default: the last) in full; Ctrl-O shows the last
/view [NAME]       show teammate NAME's live transcript; what you type goes to it; /view alone: the lead
                   (Ctrl-T: the next teammate, then the lead again)
/clear             start a new conversation (a new session; the team stays)
/exit              shut the team down and leave (also: Ctrl-C twice at an empty prompt, Ctrl-D)
Enter sends; \\ then Enter, or Alt-Enter, adds a line. Ctrl-C stops the lead's current turn."""
EXIT = "/exit"


@dataclass
class Commands:
    chat: Chat
    make_provider: Callable[[str], ModelProvider]
    """A provider for ``/model NAME`` (streaming to the chat)."""

    def handle(self, text: str) -> bool:
        """Run ``text`` if it is a command (True); False: it is a prompt (or a skill) for the lead."""
        word, _, rest = text.strip().partition(" ")
        actions = {"/help": self._help, "/team": self._team, "/tasks": self._tasks, "/agents": self._agents,
                   "/skills": self._skills, "/model": self._model, "/details": self._details, "/clear": self._clear,
                   "/view": self._view}
        action = actions.get(word)
        if action is None:
            skills = self.chat.session.skills
            if word.startswith("/") and skills.get(word[1:]) is None and "/" not in word[1:]:
                known = [*actions, EXIT, *(f"/{s.name}" for s in skills.user_invocable())]
                close = difflib.get_close_matches(word, known, n=1)
                hint = f"did you mean {close[0]}? " if close else ""
                self.chat.view.warn(f"unknown command {word}; {hint}/help lists the commands, /skills the skills")
                return True
            return False
        try:
            action(rest.strip())
        except SwarmError as exc:
            self.chat.view.warn(str(exc))
        return True

    def _help(self, _: str) -> None:
        self.chat.view.block(HELP)

    def _team(self, _: str) -> None:
        view, lead = self.chat.view, self.chat.lead
        if lead.team is None:
            view.note("no team yet: ask the lead to create one (it uses TeamCreate)")
            return
        self.chat.refresh()
        lines = [self.chat.status]
        members = [m for m in TeamStore(lead.home).get(lead.team).members if m.name != LEAD_NAME]
        for member in members:
            if member.worktree_path:
                lines.append(f"  {member.name}: worktree {member.worktree_path} (branch {member.worktree_branch})")
        panes = [m for m in members if m.backend_type == "tmux" and m.present()]
        if panes and lead.env.get("TMUX"):
            lines.append("teammates are panes of this tmux window")
        elif panes:
            socket = socket_path_for(panes[0].tmux_socket, lead.env)
            lines.append(f"watch them: tmux -S {socket} attach -t swarm-{lead.team}")
        view.block("\n".join(lines))

    def _tasks(self, _: str) -> None:
        team = self.chat.lead.team
        solo = self.chat.session.ctx.services.session_tasks
        if team is None and solo is None:
            self.chat.view.note("no team, so no task list yet")
            return
        tasks = TaskStore(self.chat.lead.home, team).list() if team is not None else solo.list() if solo else []
        if not tasks:
            self.chat.view.note(f"team {team!r} has no tasks yet" if team is not None
                                else "no team, and this session has no tasks of its own yet")
            return
        rows = [task_line(task, tasks) for task in tasks]
        self.chat.view.block("\n".join(rows))

    def _agents(self, _: str) -> None:
        catalog = self.chat.session.main.catalog
        rows = []
        for name in catalog.names():
            found = catalog.get(name)
            rows.append(f"{name}: {flat(found.description if found else '', 100)}")
        self.chat.view.block("\n".join(rows))

    def _skills(self, _: str) -> None:
        skills = self.chat.session.skills.user_invocable()
        if not skills:
            self.chat.view.note("no skills (.claude/skills/NAME/SKILL.md in the project or ~/.claude/skills/)")
            return
        self.chat.view.block("\n".join(f"/{s.name}: {flat(s.description, 100)}" for s in skills))

    def _model(self, wanted: str) -> None:
        models = self.chat.session.ctx.services.models
        assert models is not None  # a MainSession always has its TurnModel
        if not wanted:
            self.chat.view.note(f"model: {models.model}")
            return
        if models.scripted:
            self.chat.view.warn("this session plays an offline playbook; its model cannot be switched")
            return
        models.switch(self.make_provider(wanted))
        self.chat.view.note(f"model: {models.model} from the next turn")

    def _details(self, number: str) -> None:
        if number and not number.isdigit():
            self.chat.view.warn("/details takes a tool call number, e.g. /details 3")
            return
        self.chat.view.details(int(number) if number else None)

    def _view(self, name: str) -> None:
        self.chat.focus.show(name or None)

    def _clear(self, _: str) -> None:
        if self.chat.busy.is_set():
            self.chat.view.warn("the lead is working; Ctrl-C stops it, then /clear")
            return
        session = self.chat.session
        fresh = new_session(self.chat.home)
        old = session.conversation
        session.conversation = Conversation(transcript=Transcript(fresh.transcript), observer=old.observer,
                                            on_compacted=old.on_compacted)
        self.chat.session_id = fresh.id
        self.chat.view.note(f"new conversation (session {fresh.id}); the team and its tasks stay")
