"""swarm: teams of AI coding agents as real OS processes."""

__version__ = "0.1.0"
