"""Permission rules and modes: which tool calls run, which are refused, which ask the lead."""
