"""Teammates on other machines: hosts (``swarm host serve``) take signed spawn requests from the database.

``request``: the signed document a lead places and a host verifies; ``place``: the lead's side
(``swarm spawn --host``); ``serve``: the host's side (register, heartbeat, take, verify, start, watch).
"""
