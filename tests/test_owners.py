"""coreb_toolkit.owners: names of what a process leaves on the host, and whose owner is dead."""

from __future__ import annotations

import subprocess
import sys

from coreb_toolkit import owners


def test_names_carry_their_owner_and_only_dead_owners_are_reclaimed():
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_tag = owners.owner_tag(dead.pid)  # read while it lives
    dead.wait()
    live = owners.owner_tag()
    namespace = live.split(".")[2]
    prefix = owners.owned_prefix("build")
    assert prefix == f"coreb-build-{live}-"
    assert owners.owner_of(prefix + "x1") == live
    assert owners.owner_of(f"coreb-a-b-{dead_tag}-x") == dead_tag  # a kind with a dash
    assert owners.owner_of("coreb-sandbox-foreign") is None
    assert owners.left_by_dead_owner(f"coreb-sandbox-{dead_tag}-x")
    assert not owners.left_by_dead_owner(prefix + "x1")
    assert not owners.left_by_dead_owner(f"coreb-sandbox-{dead.pid}.1.{int(namespace) + 1}-x")
    assert not owners.left_by_dead_owner("coreb-sandbox-foreign")
    assert owners.process_start_time(dead.pid) is None
