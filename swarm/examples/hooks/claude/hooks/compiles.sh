#!/bin/sh
# Stop: the turn may end only when every Python file compiles; exit 2 keeps the agent working with stderr.
cat >/dev/null
cd "$CLAUDE_PROJECT_DIR" || exit 0
for f in $(git ls-files '*.py'); do
  if ! python3 -m py_compile "$f" 2>/dev/null; then
    echo "compiles hook: $f does not compile; fix it before you stop." >&2
    exit 2
  fi
done
exit 0
