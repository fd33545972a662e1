"""The agent loop: model <-> tools, transcripts, definitions."""
