"""What a team's model calls cost: per member and in all, against its budget.

The figures are the team gate's (``swarm.models.team_gate``): every model
call a member makes is charged there at the model table's prices
(``swarm.models.catalog``), whatever process made it, and survives the
member's restarts. ``swarm status``, the run and ``up`` reports and the
interactive status line read them here.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from swarm.core.home import Home
from swarm.models.team_gate import SPEND_DIR, read_limits, read_spends, total_usd


class TeamCost(BaseModel):
    usd: float
    """US dollars the whole team has spent (lead included)."""
    by_member: dict[str, float]
    max_cost: float | None
    """The budget (None: none)."""
    unpriced_tokens: int = 0
    """Tokens of models the table has no price for: spent, but not in ``usd``."""

    @property
    def reached(self) -> bool:
        return self.max_cost is not None and self.usd >= self.max_cost

    def line(self) -> str:
        """``$0.1234 of a $5.00 budget (reached)`` for people."""
        budget = f" of a ${self.max_cost:.2f} budget" if self.max_cost is not None else ""
        unpriced = f" (+{self.unpriced_tokens} tokens of unpriced models)" if self.unpriced_tokens else ""
        return f"{usd(self.usd)}{budget}{' (reached: no more model calls)' if self.reached else ''}{unpriced}"


def team_cost(home: Home, team: str) -> TeamCost:
    directory = home.gate_dir(team)
    spends = read_spends(directory)
    return TeamCost(usd=round(total_usd(spends), 6), by_member={n: round(s.usd, 6) for n, s in spends.items()},
                    max_cost=read_limits(directory).max_cost,
                    unpriced_tokens=sum(s.unpriced_tokens for s in spends.values()))


def ledger_dir(home: Home, team: str) -> Path:
    """The directory the team's per-member spend files are written in (what a live view watches for a change)."""
    return home.gate_dir(team) / SPEND_DIR


def usd(amount: float) -> str:
    """Dollars as people read them: cents for large sums, four decimals below a dollar."""
    return f"${amount:,.2f}" if amount >= 1 else f"${amount:.4f}"
