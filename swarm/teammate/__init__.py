"""The teammate process: join, wait, deliver, run turns, answer frames, leave."""
