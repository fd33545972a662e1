#!/bin/sh
# SessionStart: plain stdout is context for the model's first message.
cat >/dev/null
echo "Project rule (from a SessionStart hook): never delete directories with rm -rf; keep every .py file compiling."
