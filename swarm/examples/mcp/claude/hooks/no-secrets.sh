#!/bin/sh
# PreToolUse on mcp__notes__add_note: a note that looks like a secret is blocked (exit 2; stderr goes to the model).
input=$(cat)
case "$input" in
  *[Pp]assword*|*[Tt]oken*|*[Ss]ecret*)
    echo "Blocked by the project's no-secrets hook: notes are shared; never put passwords or tokens in them." >&2
    exit 2 ;;
esac
exit 0
