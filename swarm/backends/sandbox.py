"""The one owner of the OS sandbox a command runs in: bubblewrap's argv, and whether it can run here.

``wrap`` turns a ``SandboxSpec`` (what the agent layer decided from the
settings: ``swarm.agent.sandbox``) and a command into the argv to start:

- the whole filesystem read-only (``--ro-bind / /``), fresh ``/dev`` and
  ``/proc``;
- ``writable`` paths bound read-write on top (the cwd or worktree, the
  session's temp directory, ``allowWrite``, a worktree's git metadata);
- ``pinned`` directories bound onto themselves (a mount point cannot be
  renamed or removed: ``.git`` and ``.claude`` stay where the read-only
  binds inside them are);
- ``read_only`` paths bound read-only again on top of those (the permission
  layer's protected files, ``denyWrite``); a protected *directory* that does
  not exist yet gets an empty read-only one, so a command cannot create it
  (its empty mount point appears in the tree: ``stand_ins`` lists them and
  ``tidy`` removes them once no sandboxed command runs);
- ``hidden`` paths replaced by an empty directory (``--tmpfs``) or an empty
  file (``/dev/null``): ``denyRead``;
- every namespace unshared (``--unshare-all``: network, pids, ipc, uts,
  cgroup), ``--die-with-parent`` and ``--new-session``: every process the
  command starts lives in the sandbox's own pid namespace and dies when the
  command's shell exits (a background ``&`` does not survive its command) or
  when the agent dies;
- with ``proxy_socket`` (the Unix socket of ``swarm.backends.sandbox_proxy``,
  outside the sandbox), ``socat`` inside listens on ``127.0.0.1:<port>`` and
  forwards to it, and ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY`` point
  there; without it the command has no network at all.

``check`` says what is missing (bubblewrap, socat, user namespaces) and how
to install it, or None when a sandbox starts here.
"""

from __future__ import annotations

import contextlib
import shlex
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

INSIDE_PROXY_PORT = 3128
"""The port the proxy bridge listens on inside the sandbox (its loopback is its own)."""
INSTALL_HINT = "install it with `apt-get install bubblewrap socat` (Debian/Ubuntu) or `dnf install bubblewrap socat`"
_BRIDGE_WAIT = 1000
"""Checks (a read of ``/proc/net/tcp``, then 2 ms) for socat's listening socket before the command starts anyway."""


@dataclass(frozen=True)
class SandboxSpec:
    """Where a sandboxed command may write, what it may not read, and how it reaches the network."""

    writable: Sequence[Path]
    read_only: Sequence[Path] = ()
    """Paths inside ``writable`` that stay read-only (protected files, ``denyWrite``)."""
    read_only_dirs: Sequence[Path] = ()
    """Directories that must stay read-only even if they do not exist yet (``.claude``, ``.git/hooks``)."""
    pinned: Sequence[Path] = ()
    """Directories inside ``writable`` bound onto themselves, so a command can neither rename nor replace them
    (``.git``, ``.claude``: moving one aside would shed the read-only binds inside it)."""
    hidden: Sequence[Path] = ()
    proxy_socket: Path | None = None
    """The network proxy's Unix socket (outside); None: no network."""
    tmp_dir: Path | None = None
    """The command's ``TMPDIR`` (also writable)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables set inside, on top of the inherited environment."""


def wrap(spec: SandboxSpec, shell: str, command: str, *, bwrap: str = "bwrap", socat: str = "socat") -> list[str]:
    """The argv that runs ``shell -c command`` inside the sandbox ``spec`` describes."""
    argv = [bwrap, "--die-with-parent", "--new-session", "--unshare-all", "--ro-bind", "/", "/",
            "--dev", "/dev", "--proc", "/proc"]
    writable = _existing([*spec.writable, *([spec.tmp_dir] if spec.tmp_dir else [])])
    for path in writable:
        argv += ["--bind", str(path), str(path)]
    for path in _existing(spec.pinned):
        if path.is_dir() and not path.is_symlink():
            argv += ["--bind", str(path), str(path)]
    for path in _existing(spec.read_only):
        argv += ["--ro-bind", str(path), str(path)]
    for path in _unique(spec.read_only_dirs):
        if path.is_dir():
            argv += ["--ro-bind", str(path), str(path)]
        elif not path.exists() and _under(path, writable):  # an empty read-only stand-in (its mount point stays)
            argv += ["--tmpfs", str(path), "--remount-ro", str(path)]
    fixed = [*_unique(spec.read_only), *_unique(spec.read_only_dirs)]
    for path in writable:  # a write root inside a read-only directory (a memory directory in .claude)
        if any(path != ro and path.is_relative_to(ro) for ro in fixed):
            argv += ["--bind", str(path), str(path)]
    for path in _existing(spec.hidden):
        argv += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
    for name, value in {**spec.env, **_net_env(spec), **({"TMPDIR": str(spec.tmp_dir)} if spec.tmp_dir else {})
                        }.items():
        argv += ["--setenv", name, value]
    if spec.proxy_socket is None:
        return [*argv, "--", shell, "-c", command]
    bash = shutil.which("bash") or shell
    return [*argv, "--", bash, "-c", _bridged(spec.proxy_socket, socat) + ' exec "$0" -c "$1"', shell, command]


def stand_ins(spec: SandboxSpec) -> list[Path]:
    """The directories ``wrap`` makes outside as mount points for missing read-only ones, deepest first:
    what ``tidy`` removes once no sandbox of ``spec``'s roots runs any more."""
    writable = _existing([*spec.writable, *([spec.tmp_dir] if spec.tmp_dir else [])])
    made: list[Path] = []
    for path in _unique(spec.read_only_dirs):
        if path.exists() or not _under(path, writable):
            continue
        while not path.exists() and path not in made and _under(path, writable):
            made.append(path)
            path = path.parent
    return sorted(made, key=lambda p: len(p.parts), reverse=True)


def tidy(made: Sequence[Path]) -> None:
    """Remove the empty mount points ``stand_ins`` listed (a directory something was put in stays)."""
    for path in made:
        with contextlib.suppress(OSError):
            path.rmdir()


def check(bwrap: str = "bwrap", socat: str = "socat", *, network: bool = True) -> str | None:
    """What keeps a sandbox from starting here (one line with how to fix it), or None when it starts."""
    found = shutil.which(bwrap)
    if found is None:
        return f"bubblewrap (bwrap) is not installed: {INSTALL_HINT}"
    if network and shutil.which(socat) is None:
        return f"socat is not installed (it bridges the sandbox's network proxy): {INSTALL_HINT}"
    try:
        done = subprocess.run([found, "--die-with-parent", "--unshare-all", "--ro-bind", "/", "/", "true"],
                              capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not run: {exc}"
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        return (f"bubblewrap cannot create namespaces here ({why[-1] if why else 'exit ' + str(done.returncode)}): "
                "user namespaces are off or forbidden (a container without them; "
                "sysctl kernel.unprivileged_userns_clone=1 or run the container with --privileged / a seccomp "
                "profile that allows clone(CLONE_NEWUSER))")
    return None


def _bridged(socket_path: Path, socat: str) -> str:
    """Bash text that starts the socat bridge in the background and waits until it listens (``read``, a
    builtin, checks; a busy loop without the sleep starves socat on a loaded machine); then the command starts."""
    port_hex = f"*':{INSIDE_PROXY_PORT:04X} 00000000:0000 0A'*"
    listen = f"TCP-LISTEN:{INSIDE_PROXY_PORT},bind=127.0.0.1,fork,reuseaddr"
    return (f"{shlex.quote(socat)} {listen} UNIX-CONNECT:{shlex.quote(str(socket_path))} "
            "</dev/null >/dev/null 2>&1 & "
            f"i=0; until read -r -d '' t </proc/net/tcp; [[ $t == {port_hex} ]] || [ $i -ge {_BRIDGE_WAIT} ]; "
            "do i=$((i+1)); sleep 0.002; done; unset i t;")


def _net_env(spec: SandboxSpec) -> dict[str, str]:
    if spec.proxy_socket is None:
        return {}
    url = f"http://127.0.0.1:{INSIDE_PROXY_PORT}"
    return {name: url for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                                   "all_proxy")} | {"NO_PROXY": "", "no_proxy": ""}


def _unique(paths: Sequence[Path]) -> list[Path]:
    return list(dict.fromkeys(Path(p).absolute() for p in paths))


def _existing(paths: Sequence[Path]) -> list[Path]:
    return [p for p in _unique(paths) if p.exists() or p.is_symlink()]


def _under(path: Path, roots: Sequence[Path]) -> bool:
    return any(path.is_relative_to(root) for root in roots)
