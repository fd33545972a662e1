"""click commands: parse, call one runtime function, render (table or --json)."""
