"""Claude Code-compatible command hooks: where they come from (``config``), how they run (``runner``), what
they decide (``outcome``), and an agent's set ready to fire (``session``)."""
