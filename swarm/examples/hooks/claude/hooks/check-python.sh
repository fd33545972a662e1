#!/bin/sh
# PostToolUse on Edit|Write: report whether the edited Python file still compiles (additionalContext).
file=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["tool_input"].get("file_path", ""))')
case "$file" in
  *.py) ;;
  *) exit 0 ;;
esac
if python3 -m py_compile "$file" 2>/dev/null; then verdict="compiles"; else verdict="DOES NOT COMPILE"; fi
python3 -c 'import json, sys; print(json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse",
  "additionalContext": "check-python hook: " + sys.argv[1] + " " + sys.argv[2]}}))' "$file" "$verdict"
