#!/bin/sh
# PostToolUse on every notes tool (matcher mcp__notes__.*): log the call and tell the model what was logged.
python3 -c '
import json, sys
event = json.load(sys.stdin)
tool = event["tool_name"]
with open(".notes-activity.log", "a", encoding="utf-8") as log:
    log.write(tool + " " + json.dumps(event.get("tool_input", {}), sort_keys=True) + "\n")
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse",
                  "additionalContext": "notes-log hook: " + tool + " logged in .notes-activity.log"}}))
'
