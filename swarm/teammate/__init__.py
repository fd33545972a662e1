"""The teammate process: join, wait, deliver, run turns, answer frames, leave."""

TEAMMATE = "_teammate"
"""``swarm _teammate ARGS`` (ARGS as for ``python -m swarm.teammate``): the process a backend starts for a
teammate (``teammate_command``). When the home's CLI server answers, that process is the launcher of a teammate
forked from the server (``swarm.teammate.served``); otherwise it is the teammate."""


def teammate_command(python: str, args: list[str]) -> list[str]:
    """The command a backend runs for a teammate with ``args`` (``TeammateConfig.argv()``)."""
    return [python, "-m", "swarm.cli.entry", TEAMMATE, *args]


def served_command(args: list[str]) -> list[str]:
    """The same command as the home's CLI server reads it (``LaunchSpec.served``): its ``argv[1:]`` is what
    ``teammate_command`` passes after the module."""
    return ["swarm", TEAMMATE, *args]
