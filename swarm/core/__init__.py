"""Core layer: home and names, locked JSON files, mailbox, team file, protocol models.

Knows nothing of processes or models.
"""
