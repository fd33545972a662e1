"""N network namespaces, each joined to the root namespace by its own veth pair: "machines" on one machine.

    with Namespaces(3) as nets:
        box = nets.boxes[0]                    # box.addr inside, box.gateway the root side's end
        nets.popen(box, ["swarm", "host", "serve", ...])
        nets.link_down(box); nets.link_up(box)  # a partition, and its healing

Names are unique per run (the pid); box ``i`` is ``10.<a>.<b>.<4i+1>`` (root side) and
``<4i+2>`` (inside) on a /30 of its own, with its default route over its link. ``server``
(``10.<a>.<b>.254``, on the root namespace's loopback) is where a server in the root
namespace listens: every box reaches it over its own link only, so one URL serves all
boxes and a link set down cuts just that box off. ``subnet`` covers them all (for a
pg_hba line). Teardown (``close``, also after a failure)
kills every process inside each namespace (``ip netns pids``) and deletes the namespaces
and the links. Needs root (``available`` says why not).
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any


def unavailable() -> str | None:
    """Why namespaces cannot be made here (None: they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root (CI runs as root)"
    if shutil.which("ip") is None:
        return "`ip` (iproute2) is not installed"
    probe = f"swarm-probe-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        return f"`ip netns add` fails here: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, check=False)
    return None


@dataclass(frozen=True)
class Box:
    index: int
    netns: str
    link: str
    """The root side's end of the veth pair (set down for a partition)."""
    gateway: str
    """The root side's address: what the box dials to reach a server in the root namespace."""
    addr: str


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def _subnet_base() -> ipaddress.IPv4Network:
    """A /24 in 10/8 from the pid that no route of this machine overlaps."""
    routes = [ipaddress.ip_network(line.split()[0], strict=False)
              for line in _ip("-4", "route", "show", "table", "all").stdout.splitlines()
              if line and line.split()[0][0].isdigit()]
    pid = os.getpid()
    for attempt in range(64):
        seed = pid + attempt * 7919
        net = ipaddress.IPv4Network(f"10.{200 + seed % 50}.{(seed // 50) % 250}.0/24")
        if not any(net.overlaps(r) for r in routes if r.prefixlen > 0):
            return net
    raise RuntimeError("no free 10.x /24 for the test namespaces")


@dataclass
class Namespaces:
    count: int
    boxes: list[Box] = field(default_factory=list)
    subnet: str = ""
    server: str = ""

    def __enter__(self) -> Namespaces:
        try:
            self.open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def open(self) -> None:
        net = _subnet_base()
        self.subnet = str(net)
        base = int(net.network_address)
        pid = os.getpid()
        self.server = str(ipaddress.ip_address(base + 254))
        _ip("addr", "add", f"{self.server}/32", "dev", "lo")
        for i in range(self.count):
            gateway, addr = str(ipaddress.ip_address(base + 4 * i + 1)), str(ipaddress.ip_address(base + 4 * i + 2))
            box = Box(i, f"swarm-{pid}-{i}", f"sw{pid}r{i}", gateway, addr)
            self.boxes.append(box)  # before it exists: ``close`` removes whatever part was made
            inside = f"sw{pid}n{i}"
            _ip("netns", "add", box.netns)
            _ip("link", "add", box.link, "type", "veth", "peer", "name", inside)
            _ip("link", "set", inside, "netns", box.netns)
            _ip("addr", "add", f"{gateway}/30", "dev", box.link)
            _ip("link", "set", box.link, "up")
            self._in(box, "ip", "addr", "add", f"{addr}/30", "dev", inside)
            self._in(box, "ip", "link", "set", inside, "up")
            self._in(box, "ip", "link", "set", "lo", "up")
            self._in(box, "ip", "route", "add", "default", "via", gateway)

    def _in(self, box: Box, *argv: str) -> None:
        subprocess.run(self.command(box, argv), capture_output=True, text=True, check=True)

    def command(self, box: Box, argv: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", box.netns, *argv]

    def run(self, box: Box, argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[Any]:
        return subprocess.run(self.command(box, argv), **kwargs)

    def popen(self, box: Box, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        return subprocess.Popen(self.command(box, argv), **kwargs)

    def link_down(self, box: Box) -> None:
        _ip("link", "set", box.link, "down")

    def link_up(self, box: Box) -> None:
        _ip("link", "set", box.link, "up")

    def pids(self, box: Box) -> list[int]:
        """Processes inside ``box`` that still run (zombies left out: their parent reaps them)."""
        listed = _ip("netns", "pids", box.netns, check=False).stdout.split()
        return [int(p) for p in listed if _running(int(p))]

    def close(self) -> None:
        """Kill everything inside each namespace, then delete the namespaces and links (whatever exists)."""
        for box in self.boxes:
            deadline = time.monotonic() + 10
            while (pids := self.pids(box)) and time.monotonic() < deadline:
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.05)
            _ip("link", "del", box.link, check=False)
            _ip("netns", "del", box.netns, check=False)
        self.boxes = []
        if self.server:
            _ip("addr", "del", f"{self.server}/32", "dev", "lo", check=False)
            self.server = ""


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
